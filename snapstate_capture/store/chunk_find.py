"""Step conditions (``Steps.find`` / ``Steps.matching``) checked straight over trace chunks.

The inspector's navigation keys — step over (``o``/``O``), next call of this function
(``c``/``C``), next exception (``x``/``X``) — ask for the nearest step matching a few summary
conditions (``store.engine.STEP_CONDITIONS``). Rows in the ``steps`` table answer that in one SQL
query; traced steps live in trace chunks, and building each one's summary through the chunk
reader costs tens of microseconds (half a minute for a million steps). ``scan_steps`` walks a
chunk's items once with only the frame registry of ``chunk_scan`` (function, file, thread and
depth per frame), deciding a line step in a frame it already judged without looking again, and
stops at the first chunk with a hit when the caller only wants the nearest.

Meanings follow ``chunk_reader`` and the SQL filter (``store/sqlite/steps.py``): ``depth`` is the
step's stack size, ``new_stretch`` holds when the step before ran another function or at another
depth (or there is no step before), ``text`` is a case-insensitive substring of function, file
name or label; a ``gap`` step has no frame (function None, depth 0) and the thread it names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import IntegrityError
from . import chunks
from .chunk_scan import ChunkScan, _decode, _Frames, chunk_rows

if TYPE_CHECKING:
    from .reader import Timeline

_LINE_BITS = chunks.LINE_BITS
_OPEN, _ADOPT, _RETURN, _EXCEPTION, _GAP = (
    chunks.OPEN, chunks.ADOPT, chunks.RETURN, chunks.EXCEPTION, chunks.GAP)

#: ``previous(index)``: ``(function, depth)`` of step ``index``, None when there is none.
Previous = Callable[[int], "tuple[Any, int] | None"]


class _Threads(_Frames):
    """``chunk_scan``'s frame registry plus each frame's thread."""

    def __init__(self) -> None:
        super().__init__()
        self.thread: dict[Any, Any] = {}

    def header(self, header: dict[str, Any]) -> list[tuple]:
        entries = super().header(header)
        for entry in entries:
            self.thread[entry[0]] = entry[2]
        return entries


def scan_steps(timeline: Timeline, run_id: str, start: int, stop: int, where: dict[str, Any],
               *, backward: bool = False, previous: Previous | None = None
               ) -> Iterator[ChunkScan]:
    """The steps ``start`` … ``stop - 1`` stored in chunks that match ``where``, one
    ``ChunkScan`` per chunk touched (``found``: ``(index, None)`` in step order; chunks latest
    first when ``backward``). ``new_stretch`` at a chunk's first step needs the step before it:
    the chunk scanned just before (forward), the chunk scanned next (backward: that chunk is
    yielded first, then this one), else ``previous`` (None: no step before). Raises
    ``IntegrityError`` for a chunk that does not decode or whose items are malformed."""
    frames = _Threads()
    last_place: Any = None  # (function, depth) of the last step of the chunk just scanned
    expected_next = None  # the step ``last_place`` comes just before
    held: tuple[ChunkScan, tuple[int, Any]] | None = None  # a later chunk waiting on this one

    def before(first: int) -> Any:
        return previous(first - 1) if previous is not None and first > 0 else None

    for first, count, data in chunk_rows(timeline, run_id, start, stop, backward=backward):
        header, items = _decode(timeline, first, data)
        scan = ChunkScan(first, count)
        carried = last_place if expected_next == first else _DEFER
        try:
            last_place, deferred = _check_chunk(scan, header, items, frames, where, carried,
                                                start, stop)
        except (TypeError, IndexError, ValueError, AttributeError) as exc:
            raise IntegrityError(timeline.path, f"trace chunk at step {first} is malformed "
                                                f"({type(exc).__name__})") from None
        expected_next = first + count
        if held is not None:  # backward: this chunk's last step comes before the held one
            later, waiting = held
            _settle(later, waiting, last_place if expected_next == later.first
                    else before(later.first))
            held = None
            yield later
        if deferred is not None:
            if backward:
                held = (scan, deferred)
                continue
            _settle(scan, deferred, before(first))
        yield scan
    if held is not None:
        _settle(held[0], held[1], before(held[0].first))
        yield held[0]


def _settle(scan: ChunkScan, deferred: tuple[int, Any], before: Any) -> None:
    """A chunk's first step matched all but ``new_stretch``: it is a hit when the step before
    (``before``: its ``(function, depth)``, None for none) ran elsewhere."""
    index, place = deferred
    if place != before:
        scan.found.insert(0, (index, None))


def _check_chunk(scan: ChunkScan, header: dict, items: list, frames: _Threads,
                 where: dict[str, Any], carried: Any, start: int, stop: int
                 ) -> tuple[Any, tuple[int, Any] | None]:
    """``scan_steps`` for one decoded chunk (hot loop: one pass over the items). ``carried``:
    the ``(function, depth)`` of the step before the chunk, or ``_DEFER`` when not known yet.
    Returns the place of its last step, and ``(index, place)`` of its first step when that
    step's being a hit waits on the step before (else None)."""
    frames.header(header)
    wants_stretch = bool(where.get("new_stretch"))
    test = _compile(where)
    verdict: dict[Any, bool] = {}  # fid -> does a label-less line step there match
    seen_version = frames.version
    found = scan.found
    index = scan.first - 1
    prev_fid: Any = _UNKNOWN  # the frame of the step before (its place is ``prev_place``)
    prev_place = carried
    deferred = None
    for item in items:
        if type(item) is int:  # the hot path: a line step
            index += 1
            fid = item >> _LINE_BITS
            kind, label, thread = "line", None, None
        else:
            code = item[0]
            thread = label = None
            if code >= 0:
                fid, kind = code >> _LINE_BITS, "line"
            elif code in (_OPEN, _ADOPT):
                fid = item[1]
                frames.add(fid, item[2], item[5], item[6])
                frames.thread[fid] = item[3]
                if code == _ADOPT:
                    continue
                kind = "call"
            elif code == _RETURN or code == _EXCEPTION:
                fid, label = item[1], item[5]
                kind = "return" if code == _RETURN else "exception"
            elif code == _GAP:
                fid, kind, label, thread = None, "gap", item[4], item[1]
            else:  # refresh, tasks, time: not steps
                continue
            index += 1
            if frames.version != seen_version:  # a frame moved (a resumed generator)
                verdict.clear()
                seen_version = frames.version
                prev_fid = _UNKNOWN
        if index >= stop:
            break
        if label is None and kind == "line" and fid in verdict:
            hit = verdict[fid]
        else:
            hit = test(kind, fid, label, thread, frames)
            if label is None and kind == "line":
                verdict[fid] = hit
        if fid is None or fid != prev_fid:
            place = _place(fid, frames)
            if prev_place is _DEFER:
                if hit and wants_stretch and index >= start:
                    deferred = (index, place)
                    hit = False
                prev_place = None
            new_stretch = place != prev_place
            prev_fid, prev_place = fid, place
        else:
            new_stretch = False
        if hit and index >= start and (new_stretch or not wants_stretch):
            found.append((index, None))
    return prev_place, deferred


_UNKNOWN = object()
_DEFER = object()


def _place(fid: Any, frames: _Threads) -> tuple[Any, int]:
    """``(function, depth)`` of a step in frame ``fid`` (``(None, 0)`` for a gap)."""
    if fid is None or fid not in frames.depth:
        return None, 0
    return frames.function.get(fid), frames.depth[fid]


def _compile(where: dict[str, Any]) -> Callable[..., bool]:
    """A test ``(kind, fid, label, thread, frames) -> bool`` of every condition in ``where``
    but ``new_stretch`` (which needs the step before: ``_check_chunk``)."""
    kind_is, label_is = where.get("kind"), where.get("label")
    function_is, thread_is = where.get("function"), where.get("thread")
    max_depth = where.get("max_depth")
    text = where.get("text")
    needle = str(text).lower() if text is not None else None

    def test(kind: str, fid: Any, label: Any, thread: Any, frames: _Threads) -> bool:
        if kind_is is not None and kind != kind_is:
            return False
        if label_is is not None and label != label_is:
            return False
        known = fid is not None and fid in frames.depth
        function = frames.function.get(fid) if known else None
        if function_is is not None and function != function_is:
            return False
        if thread_is is not None:
            if (frames.thread.get(fid) if known else thread) != thread_is:
                return False
        if max_depth is not None and (frames.depth[fid] if known else 0) > int(max_depth):
            return False
        if needle is not None:
            filename = frames.filename.get(fid) if known else None
            if needle not in f"{function or ''} {filename or ''} {label or ''}".lower():
                return False
        return True

    return test
