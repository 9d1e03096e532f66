"""Where each navigation key goes: step indexes computed from the reader (UI-free).

Every method takes the current step index and returns the target index, or None when there is
nowhere to go (the app then stays put and says so). Searches run as one SQL query in the reader
(``Steps.find``), so on a 1,000,000-step run each answer costs milliseconds; traced steps are
scanned from their trace chunks (``store/chunk_find.py``: ~0.4 s of CPU per million steps).

Definitions (shared with the help screen):
- *step over*: the next step at the same or a shallower stack depth in the same thread, so the
  steps inside calls made from here are skipped.
- *exception*: an ``exception`` step, or an effect step whose call raised (caught or not).
- *call of the same function*: for a ``call`` step with a label (``@snap.step``), the next
  ``call`` step with that label; otherwise the next step that starts a new stretch in the same
  function (the step before it ran elsewhere or at another depth).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from snapstate_capture import Run, StepSummary


class Navigator:
    """Finds navigation targets in one run. ``run.steps`` is read lazily, never loaded whole."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.steps = run.steps
        self._traced: bool | None = None

    def _raised_effects(self) -> list[int]:
        return self.run.raised_effect_steps()  # read once per run length (the Run keeps it)

    @property
    def traced(self) -> bool:
        """Whether some steps are stored in trace chunks (searches over them scan chunks)."""
        if self._traced is None:
            self._traced = self.steps.has_traced()
        return self._traced

    def count(self) -> int:
        """Number of steps now (grows while the run is recorded)."""
        return len(self.steps)

    def clamp(self, index: int) -> int | None:
        """``index`` forced into ``0 … count-1`` (None for a run without steps)."""
        count = self.count()
        if count == 0:
            return None
        return min(max(index, 0), count - 1)

    def summary(self, index: int) -> StepSummary | None:
        rows = self.steps.summaries(index, index + 1)
        return rows[0] if rows else None

    def next(self, index: int) -> int | None:
        return index + 1 if index + 1 < self.count() else None

    def previous(self, index: int) -> int | None:
        return index - 1 if index > 0 else None

    def first(self) -> int | None:
        return 0 if self.count() else None

    def last(self) -> int | None:
        count = self.count()
        return count - 1 if count else None

    def step_over(self, index: int, *, backward: bool = False) -> int | None:
        """Next (previous) step at this step's depth or shallower, in the same thread."""
        here = self.summary(index)
        if here is None:
            return None
        return self.steps.find(index, backward=backward, max_depth=here.depth,
                               thread=here.thread)

    def call(self, index: int, *, backward: bool = False) -> int | None:
        """Next (previous) call of the function running at ``index`` (see module docstring)."""
        here = self.summary(index)
        if here is None:
            return None
        if here.kind == "call" and here.label:
            return self.steps.find(index, backward=backward, kind="call", label=here.label)
        if here.function is None:
            return None
        return self.steps.find(index, backward=backward, function=here.function,
                               new_stretch=True)

    def exception(self, index: int, *, backward: bool = False) -> int | None:
        """Next (previous) ``exception`` step, or effect step whose call raised (the program
        may have caught it: no ``exception`` step is recorded then), whichever is nearer."""
        found = self.steps.find(index, backward=backward, kind="exception")
        raised = self._raised_effects()
        if backward:
            position = bisect_left(raised, index)
            effect = raised[position - 1] if position else None
        else:
            position = bisect_right(raised, index)
            effect = raised[position] if position < len(raised) else None
        if found is None or effect is None:
            return effect if found is None else found
        return max(found, effect) if backward else min(found, effect)
