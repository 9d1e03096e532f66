"""A run's steps as a lazy sequence (``Run.steps``): rows, summaries, searches and plots.

Steps recorded one by one (checkpoints, effects, ``@step``) are rows the engine answers for
directly; traced steps live in trace chunks and are read, summarised and filtered through the
chunk reader (``store.chunk_reader``) and scans (``store.chunk_scan``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

from ..errors import IntegrityError
from . import sanitize, task_column
from .engine import STEP_CONDITIONS
from .records import Step, StepSummary

if TYPE_CHECKING:
    from .reader import Run

_loads = sanitize.loads_bounded


class Steps(Sequence["Step"]):
    """The steps of one run: a lazy sequence, read from the file on demand.

    Supports ``len``, integer indexing (negative too) and slices; raises ``IndexError`` for an
    index out of range. ``len`` is re-read from the file each time, so it grows while the run is
    being recorded.
    """

    def __init__(self, run: Run) -> None:
        self.run = run

    def __len__(self) -> int:
        # Never more than the rows present: a crafted step count cannot promise 2**62 steps.
        timeline = self.run.timeline
        count, present, chunked = timeline.engine.step_bounds(self.run.id)
        if isinstance(chunked, int) and (not isinstance(present, int) or chunked > present):
            present = chunked
        if not isinstance(count, int) or not isinstance(present, int):
            return 0
        return max(0, min(count, present))

    @overload
    def __getitem__(self, index: int) -> Step: ...
    @overload
    def __getitem__(self, index: slice) -> list[Step]: ...

    def __getitem__(self, index: int | slice) -> Step | list[Step]:
        if isinstance(index, slice):
            start, stop, stride = index.indices(len(self))
            if stride != 1:
                return [self[i] for i in range(start, stop, stride)]
            return self.range(start, stop)
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(f"step {index} out of range (run has {size} steps)")
        row = self.run.timeline.engine.step_row(self.run.id, index)
        if row is None:
            traced = self.run.timeline.chunk_steps.step(self.run, index)
            if traced is None:
                raise IntegrityError(self.run.timeline.path, f"step {index} is missing")
            return traced
        return Step(self.run, row)

    def range(self, start: int, stop: int) -> list[Step]:
        """Steps ``start`` … ``stop - 1`` in one query."""
        rows = self.run.timeline.engine.step_rows(self.run.id, start, stop)
        steps = [Step(self.run, row) for row in rows]
        if len(steps) < stop - start:  # the rest are traced steps stored in chunks
            steps.extend(self.run.timeline.chunk_steps.range(self.run, start, stop))
            steps.sort(key=lambda s: s.index)
        return steps

    # -- light reads for long lists (the inspector's timeline, navigation and search) ---------
    def summaries(self, start: int, stop: int) -> list[StepSummary]:
        """Light rows for steps ``start`` … ``stop - 1`` in one query (no frames, no JSON);
        traced steps stored in chunks are summarised from their decoded chunk."""
        rows = self.run.timeline.engine.summary_rows(self.run.id, start, stop)
        out = [StepSummary(*row[:-1], *task_column.split(row[-1])) for row in rows]
        if len(out) < min(stop, len(self)) - max(start, 0):
            out.extend(_summary_of(step) for step in self._traced(start, stop))
            out.sort(key=lambda summary: summary.index)
        return out

    def _traced(self, start: int, stop: int) -> list[Step]:
        """The steps of ``start`` … ``stop - 1`` stored in trace chunks (none for most runs)."""
        return self.run.timeline.chunk_steps.range(self.run, start, stop)

    def scan_traced_matches(self, start: int, stop: int, *, needle: str, blob: Any,
                            values: bool = True) -> Iterator:
        """Search steps ``start`` … ``stop - 1`` stored in trace chunks for ``needle``, a chunk at
        a time (``store.chunk_scan.scan_matches``: yields ``ChunkScan`` with ``(index, where)``;
        ``blob(name, ref)`` judges values stored as blobs; ``values`` False: names of steps'
        functions, labels and files only)."""
        from .chunk_scan import scan_matches

        return scan_matches(self.run.timeline, self.run.id, start, stop, needle=needle,
                            blob=blob, values=values)

    def scan_traced_variable(self, position: int, function: str, name: str, start: int,
                             stop: int, *, backward: bool = False) -> Iterator:
        """Where one variable changes among steps ``start`` … ``stop - 1`` stored in trace
        chunks (``store.chunk_scan.scan_variable``: yields ``ChunkScan`` with ``(index, raw)``;
        ``store.chunk_reader.value_ref(raw)`` is the reader's value ref)."""
        from .chunk_scan import scan_variable

        return scan_variable(self.run.timeline, self.run.id, position, function, name, start,
                             stop, backward=backward)

    def has_traced(self) -> bool:
        """Whether some of these steps were recorded by the tracer (stored in chunks)."""
        return self.run.timeline.engine.run_has_chunks(self.run.id)

    def find(self, after: int, *, backward: bool = False, **where: Any) -> int | None:
        """Index of the first step after ``after`` (before it when ``backward``) matching
        ``where``, or None. Conditions (all optional, combined with AND): ``kind``,
        ``function``, ``label``, ``thread`` (equal), ``max_depth`` (depth <= it), ``text``
        (case-insensitive substring of function, filename or label), ``new_stretch`` (True: the
        previous step ran a different function or depth — a new call of it). One SQL query.
        """
        _check_conditions(where)
        engine = self.run.timeline.engine
        row_hit = engine.find_step(self.run.id, after, backward, where)
        if not self.has_traced():
            return row_hit
        # traced steps live in chunks: scan them up to the row found, nearest chunk first
        if backward:
            start, stop = (row_hit + 1 if row_hit is not None else 0), after
        else:
            start, stop = after + 1, (row_hit if row_hit is not None else len(self))
        for scan in self._scan(start, stop, where, backward=backward):
            if scan.found:
                return scan.found[-1 if backward else 0][0]
        return row_hit

    def matching(self, start: int, stop: int, **where: Any) -> list[int]:
        """Indexes of steps ``start`` … ``stop - 1`` matching ``where`` (see ``find``)."""
        _check_conditions(where)
        found = self.run.timeline.engine.matching_steps(self.run.id, start, stop, where)
        if self.has_traced():
            found.extend(index for scan in self._scan(start, stop, where)
                         for index, _ in scan.found)
            found.sort()
        return found

    def _scan(self, start: int, stop: int, where: dict[str, Any], *,
              backward: bool = False) -> Iterator:
        """``store.chunk_find.scan_steps`` over this run's chunks (``ChunkScan`` per chunk)."""
        from .chunk_find import scan_steps

        def previous(index: int) -> tuple[Any, int] | None:
            rows = self.summaries(index, index + 1)
            return (rows[0].function, rows[0].depth) if rows else None

        return scan_steps(self.run.timeline, self.run.id, max(start, 0), stop, where,
                          backward=backward, previous=previous)

    def frame_keys(self, start: int, stop: int) -> list[tuple[int, list[str]]]:
        """``(index, frame-record hashes outermost first)`` for steps ``start`` … ``stop - 1``."""
        rows = self.run.timeline.engine.frame_key_rows(self.run.id, start, stop)
        return [(int(idx), _loads(frames, [])) for idx, frames in rows]

    def state_refs(self, start: int, stop: int) -> dict[int, tuple[list[str], dict[str, Any]]]:
        """``{index: (frame-record keys outermost first, step values' refs)}`` of the steps
        ``start`` … ``stop - 1`` stored as rows, in one query and with no ``Step`` built: what
        ``Step.frame_keys`` and the refs of ``Step.extra`` hold. Traced steps (no stack list
        of their own) and malformed rows are left out (reading them as ``Step`` says why)."""
        out: dict[int, tuple[list[str], dict[str, Any]]] = {}
        for idx, frames, extra in self.run.timeline.engine.state_rows(self.run.id, start, stop):
            keys = sanitize.stack_keys(frames) if frames is not None else None
            if keys is not None and isinstance(idx, int):
                out[idx] = (keys, sanitize.extra_refs(extra))
        return out

    def changed_totals(self, start: int, stop: int, buckets: int) -> list[int]:
        """Sum of ``n_changed`` per bucket: steps ``start`` … ``stop - 1`` cut into ``buckets``
        equal ranges (for a plot over the run). One grouped query."""
        span = max(stop - start, 1)
        rows = self.run.timeline.engine.changed_totals(self.run.id, start, stop, buckets)
        totals = [0] * buckets
        for bucket, total in rows:
            if 0 <= bucket < buckets:
                totals[bucket] = int(total or 0)
        for step in self._traced(start, stop):
            bucket = (step.index - start) * buckets // span
            if 0 <= bucket < buckets:
                totals[bucket] += int(step.n_changed or 0)
        return totals

    def __iter__(self) -> Iterator[Step]:
        size, start = len(self), 0
        while start < size:
            chunk = self.range(start, min(start + 1000, size))
            if not chunk:
                return
            yield from chunk
            start += len(chunk)


#: Conditions that compare a summary field for equality.
_EQUAL_CONDITIONS = frozenset({"kind", "function", "label", "thread"})


def _summary_of(step: Step) -> StepSummary:
    return StepSummary(step.index, step.kind, step.label, step.wall_time, step.function,
                       step.filename, step.lineno, step.depth, step.n_changed, step.thread,
                       step.task, step.lineage)


def _summary_matches(row: StepSummary, previous: StepSummary | None,
                     where: dict[str, Any]) -> bool:
    """``_step_filter``'s conditions, checked on one summary (for steps in trace chunks)."""
    for name, value in where.items():
        if value is None:
            continue
        if name in _EQUAL_CONDITIONS:
            if getattr(row, name) != value:
                return False
        elif name == "max_depth":
            if row.depth > int(value):
                return False
        elif name == "text":
            text = f"{row.function or ''} {row.filename or ''} {row.label or ''}".lower()
            if str(value).lower() not in text:
                return False
        elif name == "new_stretch":
            if value and previous is not None and (previous.function == row.function
                                                   and previous.depth == row.depth):
                return False
        else:
            raise TypeError(f"unknown step condition {name!r}")
    return True


def _check_conditions(where: dict[str, Any]) -> None:
    """Raise ``TypeError`` for a condition ``Steps.find``/``matching`` does not know."""
    for name in where:
        if name not in STEP_CONDITIONS:
            raise TypeError(f"unknown step condition {name!r}")


