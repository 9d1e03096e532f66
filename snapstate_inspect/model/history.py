"""Back/forward through the places a person has visited, like a browser (UI-free).

A place is ``(run_id, step)``. ``visit`` records a jump (not every single step: the app calls it
for jumps such as go-to, search hits, next exception, so back returns to where you were before
the jump). Bounded: the oldest places are dropped past ``limit``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Place:
    """A position in a file: the run's id and a step index."""

    run_id: str
    step: int


class History:
    """Back and forward stacks of ``Place``; ``limit`` places kept each way."""

    def __init__(self, limit: int = 500) -> None:
        self.limit = limit
        self._back: list[Place] = []
        self._forward: list[Place] = []

    def visit(self, origin: Place) -> None:
        """Record leaving ``origin`` for a new place; clears the forward stack."""
        if not self._back or self._back[-1] != origin:
            self._back.append(origin)
            del self._back[:-self.limit]
        self._forward.clear()

    def back(self, current: Place) -> Place | None:
        """Return the previous place (None at the start) and remember ``current`` for forward."""
        if not self._back:
            return None
        self._forward.append(current)
        return self._back.pop()

    def forward(self, current: Place) -> Place | None:
        """Return the place ``back`` left (None if there is none)."""
        if not self._forward:
            return None
        self._back.append(current)
        return self._forward.pop()

    @property
    def can_back(self) -> bool:
        return bool(self._back)

    @property
    def can_forward(self) -> bool:
        return bool(self._forward)


@dataclass(frozen=True)
class Selection:
    """What the inspector shows: a run, a step in it (-1 when the run has no steps) and a frame
    position on that step's stack (None = the innermost frame)."""

    run_id: str
    step: int
    frame: int | None = None

    @property
    def place(self) -> Place:
        return Place(self.run_id, self.step)
