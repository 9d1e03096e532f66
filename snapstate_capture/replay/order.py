"""Which recorded step a replayed step is compared with: per lineage, in recorded order.

Concurrent threads and asyncio tasks interleave by timing, and on replay served effects
return at once, so the program reaches its steps in another global order. What does not
change is each lineage's own sequence (``capture/lineage.py``): the k-th step a lineage
makes on replay is compared with the k-th step it made when recorded. An interleaving that
differs only in timing is therefore not a divergence; a lineage that makes a different step,
or one step more or fewer, is.

A run recorded before lineages existed (no ``entry["lineage"]``) is compared in global
order, as it was recorded.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Iterable

#: The lane every step falls in when the recording has no lineages.
_GLOBAL = ""


class StepOrder:
    """The recorded step indices of each lineage, and which of them were replayed.

    ``lineages``: the recorded steps' lineages in index order (None for a step without one);
    ``by_lineage``: False to compare in global order. Thread-safe.
    """

    def __init__(self, lineages: Iterable[str | None], *, by_lineage: bool = True) -> None:
        self.by_lineage = by_lineage
        self._indices: dict[str, list[int]] = defaultdict(list)
        count = 0
        for index, lineage in enumerate(lineages):
            self._indices[(lineage or _GLOBAL) if by_lineage else _GLOBAL].append(index)
            count = index + 1
        self.count = count
        self._cursor: dict[str, int] = defaultdict(int)
        self._done = bytearray(count)
        self.replayed = 0
        #: The lowest recorded step not replayed yet (``count`` when all were).
        self.low = 0
        self._lock = threading.Lock()

    def lane(self, lineage: str | None) -> str:
        """The lane a live step of ``lineage`` is ordered in."""
        return (lineage or _GLOBAL) if self.by_lineage else _GLOBAL

    def peek(self, lineage: str | None) -> int | None:
        """The recorded index the lineage's next step will be compared with, or None when its
        recorded steps are all taken."""
        lane = self.lane(lineage)
        with self._lock:
            indices = self._indices.get(lane, ())
            position = self._cursor[lane]
            return indices[position] if position < len(indices) else None

    def take(self, lineage: str | None) -> int | None:
        """Like ``peek``, and the lineage moves on to its next recorded step."""
        lane = self.lane(lineage)
        with self._lock:
            indices = self._indices.get(lane, ())
            position = self._cursor[lane]
            if position >= len(indices):
                return None
            self._cursor[lane] = position + 1
            return indices[position]

    def done(self, index: int) -> None:
        """Recorded step ``index`` was replayed and matched."""
        with self._lock:
            if 0 <= index < self.count and not self._done[index]:
                self._done[index] = 1
                self.replayed += 1
                while self.low < self.count and self._done[self.low]:
                    self.low += 1

    def lane_count(self, lineage: str | None) -> int:
        """How many steps the lineage recorded."""
        return len(self._indices.get(self.lane(lineage), ()))

    def last_of(self, lineage: str | None) -> int | None:
        """The lineage's last recorded index, or None when it recorded no step."""
        indices = self._indices.get(self.lane(lineage))
        return indices[-1] if indices else None
