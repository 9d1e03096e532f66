"""Whole-run scans of traced steps, straight over the items of trace chunks (``store.chunks``).

``chunk_reader`` rebuilds one step at a time as ``Step``/``Frame``/``Value`` objects — right for
showing a step, far too slow for asking a question of a million of them (a step object costs
tens of microseconds). The inspector's search, variable history and next/previous change read
every step, so they replay each chunk's items here once, keeping only what the question needs:

- ``scan_matches`` — which steps match a search: the step's function or file, its label, or a
  local of any frame on its stack (judged by callbacks, each distinct value judged once);
- ``scan_variable`` — the value of one variable (the local ``name`` of the frame at stack
  position ``position`` while it runs ``function``) at the steps where it changes.

Both yield one ``ChunkScan`` per chunk touched, in step order (``backward=True``: chunks latest
first, each chunk's findings still in step order), so a caller can show progress and stop early.
Frames and values keep the chunk reader's meaning: a step's stack is its frame and that frame's
callers (``parent`` chain), a caller's locals are those of its own last step, a ``return``
step still has the returning frame on its stack. Raises ``IntegrityError`` for a chunk that
does not decode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import IntegrityError
from . import blobs, chunks, sanitize
from .chunk_reader import value_ref

if TYPE_CHECKING:
    from .reader import Timeline

#: The variable's frame is on the stack but has no local of that name (yet, or any more).
NO_LOCAL = object()
#: Chunks read per query (a chunk of line steps is ~10-60 kB stored).
ROWS_PER_QUERY = 4

_LINE_BITS = chunks.LINE_BITS
_OPEN, _ADOPT, _RETURN, _EXCEPTION, _GAP, _REFRESH = (
    chunks.OPEN, chunks.ADOPT, chunks.RETURN, chunks.EXCEPTION, chunks.GAP, chunks.REFRESH)
_DELETED = ()
#: A step index past any run's last (chunk queries bound it as a 64-bit integer).
_ALL_STEPS = 1 << 62


@dataclass
class ChunkScan:
    """What one chunk of steps ``first`` … ``first + count - 1`` gave: ``found``, in step order —
    ``(index, where)`` for ``scan_matches``, ``(index, value ref)`` for ``scan_variable``."""

    first: int
    count: int
    found: list[tuple[int, Any]] = field(default_factory=list)


def has_chunks(timeline: Timeline, run_id: str) -> bool:
    """Whether run ``run_id`` has steps stored in trace chunks."""
    return timeline.engine.run_has_chunks(run_id)


def chunk_rows(timeline: Timeline, run_id: str, start: int, stop: int, *,
               backward: bool = False) -> Iterator[tuple[int, int, bytes]]:
    """``(first, count, data)`` of the run's chunks holding steps ``start`` … ``stop - 1``, in
    step order (latest first when ``backward``), ``ROWS_PER_QUERY`` per query."""
    if stop <= start or not timeline.chunk_steps.available:
        return
    bound = stop if backward else -1
    while True:
        rows = timeline.engine.chunk_page(run_id, start, stop, bound, ROWS_PER_QUERY,
                                          backward=backward)
        for first, count, data, _ in rows:
            yield sanitize.chunk_row(timeline.path, first, count, data)
        if len(rows) < ROWS_PER_QUERY:
            return
        bound = rows[-1][0]


def _decode(timeline: Timeline, first: int, data: bytes) -> tuple[dict, list]:
    try:
        return chunks.decode(data)
    except ValueError as exc:
        raise IntegrityError(timeline.path, f"trace chunk at step {first}: {exc}") from None


class _Frames:
    """Identity and position of the frames of a run, as its chunks introduce them."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.function: dict[int, Any] = {}
        self.filename: dict[int, Any] = {}
        self.depth: dict[int, int] = {}
        self.version = 0  # bumped when a known frame is re-registered (a resumed generator)

    def add(self, fid: Any, parent: Any, function: Any, filename: Any) -> None:
        hash(fid), hash(parent)  # a malformed chunk's list here fails now (TypeError)
        if fid in self.depth:
            self.version += 1
        self.parent[fid] = parent
        self.function[fid] = function
        self.filename[fid] = filename
        self.depth[fid] = self.depth.get(parent, 0) + 1

    def header(self, header: dict[str, Any]) -> list[tuple]:
        """Register the frames alive at a chunk's start (parents first); return them."""
        entries = [entry for entry in header.get("frames") or ()
                   if isinstance(entry, (tuple, list)) and len(entry) == 10]
        known = {entry[0] for entry in entries}
        placed: set[Any] = set()
        pending = list(entries)
        while pending:  # parents before children, whatever order the header lists them in
            rest = []
            for entry in pending:
                if entry[1] in known and entry[1] not in placed and entry[1] != entry[0]:
                    rest.append(entry)
                    continue
                if (entry[0] not in self.depth or self.parent.get(entry[0]) != entry[1]
                        or self.function.get(entry[0]) != entry[4]):
                    self.add(entry[0], entry[1], entry[4], entry[5])
                placed.add(entry[0])
            if len(rest) == len(pending):  # a parent cycle (malformed): place them anyway
                for entry in rest:
                    self.add(entry[0], entry[1], entry[4], entry[5])
                break
            pending = rest
        return entries

    def chain(self, fid: int) -> Iterator[int]:
        """``fid`` and its callers, innermost first."""
        seen = set()
        while fid in self.depth and fid not in seen:
            seen.add(fid)
            yield fid
            fid = self.parent[fid]


def scan_matches(timeline: Timeline, run_id: str, start: int, stop: int, *, needle: str,
                 blob: Callable[[str, dict[str, Any]], str | None], values: bool = True
                 ) -> Iterator[ChunkScan]:
    """The steps ``start`` … ``stop - 1`` in chunks that match a search for ``needle`` (lower
    case), with what matched: ``"function"``, ``"label"`` or ``"file"`` when the step's own
    function, label or file name holds it, else ``"value NAME"`` for the innermost frame of its
    stack with a local whose name or value holds it.

    A scalar kept in the chunk matches by its repr (what its preview shows); a value stored as
    blobs is judged by ``blob(name, ref)`` (``ref``: the reader's value ref, ``{"p","b","s"}``;
    returns the ``where`` or None), asked once per distinct value of a name. With ``values``
    False, only the steps' function, label and file names are matched (the inspector's ``@``
    search).
    """
    frames = _Frames()
    judged: dict[Any, str | None] = {}
    names: dict[Any, str | None] = {}
    texts: dict[Any, str | None] = {}
    digits = set(needle) <= set("0123456789-")
    numeric = set(needle) <= set("0123456789-+.einfa")

    def judge(name: Any, raw: Any) -> str | None:
        if not values:
            return None
        where = names.get(name, _UNSEEN)
        if where is _UNSEEN:
            where = names[name] = f"value {name}" if needle in str(name).lower() else None
        if where is not None:
            return where
        kind = type(raw)
        if kind is tuple:
            key = (name, raw)
            if key not in judged:
                if len(judged) > 200_000:
                    judged.clear()
                judged[key] = blob(str(name), value_ref(raw))
            return judged[key]
        if kind is int:
            hit = digits and needle in repr(raw)
        elif kind is float:
            hit = numeric and needle in repr(raw).lower()
        else:  # str, bool, None
            hit = needle in repr(raw).lower()
        return f"value {name}" if hit else None

    def text_of(fid: int, label: Any) -> str | None:
        for where, value in (("function", frames.function.get(fid)), ("label", label),
                             ("file", frames.filename.get(fid))):
            if value and needle in str(value).lower():
                return where
        return None

    for first, count, data in chunk_rows(timeline, run_id, start, stop):
        header, items = _decode(timeline, first, data)
        scan = ChunkScan(first, count)
        try:
            _match_chunk(scan, header, items, frames, judge, text_of, texts, start, stop)
        except (TypeError, IndexError, ValueError, AttributeError) as exc:
            raise IntegrityError(timeline.path, f"trace chunk at step {first} is malformed "
                                                f"({type(exc).__name__})") from None
        yield scan


def _match_chunk(scan: ChunkScan, header: dict, items: list, frames: _Frames,
                 judge: Callable[[Any, Any], str | None],
                 text_of: Callable[[int, Any], str | None], texts: dict[Any, str | None],
                 start: int, stop: int) -> None:
    """``scan_matches`` for one decoded chunk (hot loop: one pass over its items)."""
    matching: dict[int, dict[Any, str]] = {}  # fid -> its matching locals (name -> where)
    for entry in frames.header(header):
        flat = entry[9] if isinstance(entry[9], (list, tuple)) else ()
        found = {}
        for name, raw in zip(flat[::2], flat[1::2]):
            where = judge(name, raw)
            if where is not None:
                found[name] = where
        matching[entry[0]] = found
    version = 0  # bumped whenever a frame's matching locals change
    stack_hit: dict[int, tuple[int, str | None]] = {}
    found_list = scan.found
    index = scan.first - 1
    last_fid, last_version, last_where = -1, -1, None  # the previous step's answer
    for item in items:
        if type(item) is int:  # the hot path: a line step with no change
            index += 1
            fid = item >> _LINE_BITS
            if fid == last_fid and version == last_version:
                if last_where is not None and start <= index < stop:
                    found_list.append((index, last_where))
                continue
            label = None
        else:
            label = None
            code = item[0]
            if code >= 0:
                fid, pairs_at, is_step = code >> _LINE_BITS, 1, True
            elif code in (_OPEN, _ADOPT):
                fid, pairs_at, is_step = item[1], 12, code == _OPEN
                frames.add(fid, item[2], item[5], item[6])
                matching[fid] = {}
                version += 1
            elif code in (_RETURN, _EXCEPTION):
                fid, pairs_at, is_step, label = item[1], 7, True, item[5]
            elif code == _REFRESH:
                fid, pairs_at, is_step = item[1], 3, False
            else:
                fid, pairs_at, is_step = 0, 0, code == _GAP
            if pairs_at:
                target = matching.get(fid)
                if target is None:
                    target = matching[fid] = {}
                for position in range(pairs_at, len(item) - 1, 2):
                    name, raw = item[position], item[position + 1]
                    where = None if raw == _DELETED else judge(name, raw)
                    if where is not None:
                        if target.get(name) != where:
                            target[name] = where
                            version += 1
                    elif name in target:
                        del target[name]
                        version += 1
            if not is_step:
                continue
            index += 1
        if index >= stop:
            break
        if fid == 0:
            continue
        if label is None:
            where = texts.get(fid, _UNSEEN)
            if where is _UNSEEN:
                where = texts[fid] = text_of(fid, None)
        else:
            where = text_of(fid, label)
        if where is None:
            cached = stack_hit.get(fid)
            if cached is not None and cached[0] == version:
                where = cached[1]
            else:
                for caller in frames.chain(fid):
                    hits = matching.get(caller)
                    if hits:
                        where = next(iter(hits.values()))
                        break
                stack_hit[fid] = (version, where)
        if label is None:
            last_fid, last_version, last_where = fid, version, where
        else:
            last_fid = -1
        if where is not None and index >= start:
            found_list.append((index, where))


def scan_variable(timeline: Timeline, run_id: str, position: int, function: str, name: str,
                  start: int, stop: int, *, backward: bool = False) -> Iterator[ChunkScan]:
    """Where the local ``name`` of the frame at stack ``position`` (0 = outermost) running
    ``function`` changes in steps ``start`` … ``stop - 1`` stored in chunks.

    Per chunk, ``found`` lists ``(index, ref)`` for the first step of the chunk (within the
    range) where such a frame is on the stack, then each later step whose value differs from
    the one before it (steps without the frame skipped); ``ref`` is the reader's value ref
    (``Value(timeline, name, ref)``), None when the frame has no such local then. So the value at any step is the one of the latest entry at or before it in
    its chunk, and a change between chunks shows as a differing first entry.
    """
    frames = _Frames()
    depth_wanted = position + 1
    ancestors: dict[int, int | None] = {}

    def ancestor(fid: int) -> int | None:
        """The frame at ``position`` of ``fid``'s stack when it runs ``function``, else None."""
        found = None
        for caller in frames.chain(fid):
            if frames.depth[caller] == depth_wanted:
                found = caller if frames.function.get(caller) == function else None
                break
            if frames.depth[caller] < depth_wanted:
                break
        ancestors[fid] = found
        return found

    for first, count, data in chunk_rows(timeline, run_id, start, stop, backward=backward):
        header, items = _decode(timeline, first, data)
        scan = ChunkScan(first, count)
        values: dict[int, Any] = {}  # frame -> the local's current stored value
        try:
            for entry in frames.header(header):
                flat = entry[9] if isinstance(entry[9], (list, tuple)) else ()
                values[entry[0]] = NO_LOCAL
                for local, raw in zip(flat[::2], flat[1::2]):
                    if local == name:
                        values[entry[0]] = raw
            _follow_chunk(scan, items, frames, values, name, ancestor, ancestors, start, stop)
        except (TypeError, IndexError, ValueError, AttributeError) as exc:
            raise IntegrityError(timeline.path, f"trace chunk at step {first} is malformed "
                                                f"({type(exc).__name__})") from None
        yield scan


def _follow_chunk(scan: ChunkScan, items: list, frames: _Frames, values: dict[int, Any],
                  name: str, ancestor: Callable[[int], int | None],
                  ancestors: dict[int, int | None], start: int, stop: int) -> None:
    """``scan_variable`` for one decoded chunk (hot loop: one pass over its items)."""
    last: Any = _UNSEEN
    index = scan.first - 1
    seen_version = frames.version
    found = scan.found
    last_fid, holder = -1, None
    for item in items:
        if type(item) is int:  # the hot path: a line step with no change
            index += 1
            fid = item >> _LINE_BITS
            if fid == last_fid and holder is None:
                continue
        else:
            code = item[0]
            if code >= 0:
                fid, pairs_at, is_step = code >> _LINE_BITS, 1, True
            elif code in (_OPEN, _ADOPT):
                fid, pairs_at, is_step = item[1], 12, code == _OPEN
                frames.add(fid, item[2], item[5], item[6])
                values[fid] = NO_LOCAL
            elif code in (_RETURN, _EXCEPTION):
                fid, pairs_at, is_step = item[1], 7, True
            elif code == _REFRESH:
                fid, pairs_at, is_step = item[1], 3, False
            else:
                fid, pairs_at, is_step = 0, 0, code == _GAP
            if pairs_at and fid in values:
                for position in range(pairs_at, len(item) - 1, 2):
                    if item[position] == name:
                        raw = item[position + 1]
                        values[fid] = NO_LOCAL if raw == _DELETED else raw
            if frames.version != seen_version:  # a frame moved (a resumed generator)
                ancestors.clear()
                seen_version = frames.version
                last_fid = -1
            if not is_step:
                continue
            index += 1
        if fid != last_fid:
            holder = ancestors[fid] if fid in ancestors else ancestor(fid)
            last_fid = fid
        if holder is None:
            continue
        value = values.get(holder, NO_LOCAL)
        if value is last or index < start:
            continue
        if index >= stop:
            break
        if last is _UNSEEN or not _same(value, last):
            found.append((index, None if value is NO_LOCAL else value_ref(value)))
        last = value


_UNSEEN = object()


def _same(a: Any, b: Any) -> bool:
    """Stored values equal, telling apart ``1``, ``True`` and ``1.0``."""
    return a is b or (type(a) is type(b) and a == b)


def scan_sources(timeline: Timeline, run_id: str) -> dict[str, str]:
    """``{filename: source hash}`` of every frame the run's trace chunks introduce
    (``chunks.frame_sources``; first seen wins), for code drift (``replay.drift``): a traced
    run keeps its frames in chunks, not in step rows. Reads every chunk once; raises
    ``IntegrityError`` for a chunk that does not decode."""
    sources: dict[str, str] = {}
    for first, _count, data in chunk_rows(timeline, run_id, 0, _ALL_STEPS):
        for filename, key in chunks.frame_sources(*_decode(timeline, first, data)):
            if isinstance(filename, str) and isinstance(key, str):
                sources.setdefault(filename, key)
    return sources


def has_chunked_values(timeline: Timeline, run_id: str) -> bool:
    """Whether a value of the run's traced steps is stored by chunks — its payload a manifest
    (``tracing/chunked_locals.py``; a run recorded before that stores every value whole).
    Reads chunks until one holds such a value, looking each distinct payload key up once,
    ``_KEYS_PER_QUERY`` per query, by its row's codec (no blob is decoded). Raises
    ``IntegrityError`` for a chunk that does not decode."""
    seen: set[str] = set()
    for first, _count, data in chunk_rows(timeline, run_id, 0, _ALL_STEPS):
        header, items = _decode(timeline, first, data)
        keys = _payload_keys((header, items)) - seen
        seen |= keys
        raws = [bytes.fromhex(key) for key in keys]
        for start in range(0, len(raws), _KEYS_PER_QUERY):
            rows = timeline.engine.blob_rows(raws[start:start + _KEYS_PER_QUERY])
            if any(row[1] & blobs.MANIFEST for row in rows):
                return True
    return False


#: Payload keys looked up per query (``has_chunked_values``).
_KEYS_PER_QUERY = 500
_SERIALIZERS = frozenset({"pickle", "dill"})


def _payload_keys(decoded: Any) -> set[str]:
    """The payload keys of the value references in a decoded chunk: ``(preview, payload,
    serializer)`` tuples wherever they sit (frames' locals, step items, step values). A step
    item that only looks like one names no blob: its lookup finds nothing."""
    found: set[str] = set()
    todo = [decoded]
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind is tuple:
            if (len(node) == 3 and node[2] in _SERIALIZERS and type(node[1]) is str
                    and len(node[1]) == 32):
                found.add(node[1])
            else:
                todo.extend(node)
        elif kind is list:
            todo.extend(node)
        elif kind is dict:
            todo.extend(node.values())
    return found
