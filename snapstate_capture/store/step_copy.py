"""Copying a range of one run's steps onto the end of another run: rows and trace chunks.

A fork begins with a copy of its parent's steps ``0 … N`` (``replay/fork.py``), and a traced
fork goes on with the steps its replay made after the fork point (``tracing/trace_fork.py``).
Steps stored one by one (checkpoints, effects) are copied as rows that refer to the same blobs.
Traced steps live in trace chunks (``store/chunks.py``): a chunk that lies wholly in the range
is copied byte for byte; one the range cuts is decoded and encoded again with only the steps in
the range — cut at its start, its header becomes the state of the frames just before the first
step kept (every live frame and its locals: a chunk is read without its predecessors), cut at
its end, the items after the last step kept are left out. The target's writer numbers the
copied steps on from its run's next index and chains them as it chains any step.

The blobs the copied steps name must be in the target's store: they are when the source is the
same file (a fork), and ``copy_blobs`` copies a whole store's blobs across when it is not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import chunks, task_column
from .step_record import StepRecord

if TYPE_CHECKING:
    from .reader import Run
    from .writer import TimelineWriter

#: Step rows read per query; blobs copied per transaction.
_ROWS = 500
_BLOBS = 200


def copy_steps(run: Run, start: int, stop: int, writer: TimelineWriter, target: str) -> int:
    """Append steps ``start … stop - 1`` of ``run`` to run ``target`` through ``writer``, in
    index order; return how many were copied. Raises ``IntegrityError`` for a malformed chunk,
    ``WriteFailed`` when the target cannot be written."""
    if stop <= start:
        return 0
    engine = run.timeline.engine
    spans = (engine.chunks_overlapping(run.id, start, stop)
             if engine.run_has_chunks(run.id) else [])
    at = start
    copied = 0
    for first, count in spans:
        copied += _copy_rows(run, at, max(at, first), writer, target)
        low, high = max(first, start), min(first + count, stop)
        data = engine.chunk_data(run.id, first)
        if low == first and high == first + count:
            writer.append_chunk(target, count, bytes(data), {})
        else:
            kept, encoded = cut_chunk(bytes(data), low - first, high - first)
            writer.append_chunk(target, kept, encoded, {})
        copied += high - low
        at = high
    return copied + _copy_rows(run, at, stop, writer, target)


def _copy_rows(run: Run, start: int, stop: int, writer: TimelineWriter, target: str) -> int:
    """Copy the step rows ``start … stop - 1`` (steps stored one by one)."""
    copied = 0
    for low in range(start, stop, _ROWS):
        for step in run.steps.range(low, min(stop, low + _ROWS)):
            writer.append_step(target, StepRecord(
                kind=step.kind, label=step.label, wall=step.wall_time, mono=step.mono_time,
                thread=step.thread, task=task_column.join(step.task, step.lineage),
                function=step.function, filename=step.filename, lineno=step.lineno,
                depth=step.depth, frames=step.frame_keys, extra=step._extra_refs,
                errors=step.errors, n_changed=step.n_changed))
            copied += 1
    return copied


def cut_chunk(data: bytes, low: int, high: int) -> tuple[int, bytes]:
    """The stored bytes of a chunk holding only steps ``low … high - 1`` (numbered within the
    chunk) of chunk ``data``; returns ``(steps kept, bytes)``. Raises ``ValueError`` for a
    malformed chunk or a range it does not hold."""
    header, items = chunks.decode(data)
    state = chunks.ChunkState(header)
    number = 0
    kept: list[Any] = []
    new_header: dict[str, Any] | None = header if low == 0 else None
    for item in items:
        if number >= high:
            break
        if new_header is None and chunks.is_step(item) and number == low:
            new_header = state.next_header()
        if new_header is not None:
            kept.append(item)
        if state.step(item) is not None:
            number += 1
    if new_header is None or number < high:
        raise ValueError(f"the chunk holds {number} steps, not {high}")
    return high - low, chunks.encode(new_header, kept)


def copy_blobs(source: Any, writer: TimelineWriter) -> int:
    """Copy every blob of the store behind read engine ``source`` that ``writer``'s store
    lacks, rows as they are stored (deltas keep their bases: those are copied too); returns
    how many rows were offered."""
    after = b""
    offered = 0
    while True:
        keys = source.blob_keys_after(after, _BLOBS)
        if not keys:
            return offered
        rows = []
        for key in keys:
            stored = source.blob_row(bytes(key))
            if stored is not None:
                rows.append((bytes(key), *stored))
        if rows:
            writer.add_stored_blobs(rows)
            offered += len(rows)
        after = bytes(keys[-1])
