"""A run's steps as a sequence read a page at a time, with only a few pages kept.

``diff_runs`` walks two runs' steps in order and the side-by-side view then looks at a screen of
them at a time. Holding every ``Step`` of two 10,000-step runs (a list of the reader's lazy
``Run.steps``) kept ~60,000 more objects alive for the garbage collector to walk at each full
collection (~100 ms each on a loaded 2-core machine, several per diff); reading each step with a
query of its own costs ~50 µs. ``StepPages`` reads ``PAGE`` steps per query
(``Steps.range``) and keeps the ``KEEP`` most recently used pages.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import overload

from snapstate_capture import Step

#: Steps per query, and pages kept (an LRU).
PAGE = 128
KEEP = 8


class StepPages(Sequence[Step]):
    """Steps ``0 … length - 1`` of ``steps`` (a run's ``Steps``); ``length`` is fixed when
    made (a run still being recorded grows; this view does not). Indexing as a list, negative
    indices and slices included; raises ``IndexError`` out of range and what the reader raises
    for an unreadable step (``IntegrityError``, ``TimelineError``)."""

    def __init__(self, steps: Sequence[Step], length: int, *, page: int = PAGE,
                 keep: int = KEEP) -> None:
        self.steps = steps
        self.length = length
        self.page = page
        self.keep = keep
        self._pages: OrderedDict[int, list[Step]] = OrderedDict()

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> Step: ...
    @overload
    def __getitem__(self, index: slice) -> list[Step]: ...

    def __getitem__(self, index: int | slice) -> Step | list[Step]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.length))]
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(f"step {index} out of range (run has {self.length} steps)")
        number, offset = divmod(index, self.page)
        rows = self._pages.get(number)
        if rows is None:
            start = number * self.page
            rows = self._read(start, min(start + self.page, self.length))
            self._pages[number] = rows
            if len(self._pages) > self.keep:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(number)
        return rows[offset]

    def _read(self, start: int, stop: int) -> list[Step]:
        rows = self.steps[start:stop]
        if len(rows) != stop - start or any(s.index != start + k for k, s in enumerate(rows)):
            rows = [self.steps[i] for i in range(start, stop)]  # a gap: each step asked alone
        return rows
