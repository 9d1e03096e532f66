"""Reading traced steps out of ``trace_chunks`` as ordinary ``Step``/``Frame``/``Value`` objects.

``reader.Steps`` asks ``ChunkSteps`` for any index that has no ``steps`` row. A chunk is decoded
once (LRU of a few chunks per timeline); one pass over it gives every step's summary (kind,
function, line, thread, task, time), and the locals of a step are rebuilt by replaying the chunk
from the nearest saved state (kept every ``STATE_EVERY`` steps), or on from the step read just
before it in the same chunk (steps read in order cost one item each). A caller frame shows its locals
as of its own last step. Line steps carry the time of the latest timed item before them (a call,
return, exception or the writer's flush mark, at most ``tracing.stream.FLUSH_SECONDS`` apart).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..errors import IntegrityError
from .hashing import canonical_json, content_hash
from . import chunks, sanitize
from .records import Frame, Step, Value

if TYPE_CHECKING:
    from .reader import Run, Timeline

STATE_EVERY = 128
_CACHE_CHUNKS = 8


def value_ref(value: Any) -> dict[str, Any]:
    """The reader's value ref (``{"p","b","s"}`` or ``{"v"}`` for an inline scalar)."""
    if type(value) is tuple and len(value) == 3:
        preview, payload, serializer = value
        ref: dict[str, Any] = {"p": preview}
        if payload:
            ref["b"] = payload
            ref["s"] = serializer
        return ref
    return {"v": value}


class DecodedChunk:
    """One chunk: its items, where each step is, summaries, and saved replay states."""

    def __init__(self, first: int, count: int, data: bytes, path: Any) -> None:
        self.first = first
        self.count = count
        try:
            self.header, self.items = chunks.decode(data)
        except ValueError as exc:
            raise IntegrityError(path, f"trace chunk at step {first}: {exc}") from None
        self.positions: list[int] = []
        self.summaries: list[tuple] = []
        self.states: dict[int, tuple[dict[int, chunks.LiveFrame], Any, float, float]] = {}
        #: The last state ``_replay_to`` returned and its step number (see there).
        self._cursor: tuple[int, chunks.ChunkState] | None = None
        self._cursor_lock = threading.Lock()
        try:
            self._index(count)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError) as exc:
            raise IntegrityError(path, f"trace chunk at step {first} is malformed "
                                       f"({type(exc).__name__})") from None
        if len(self.positions) != count:
            raise IntegrityError(path, f"trace chunk at step {first} holds "
                                       f"{len(self.positions)} steps, not {count}")

    def _index(self, count: int) -> None:
        """One pass over the items: where each step is, its summary, saved replay states."""
        state = chunks.ChunkState(self.header)
        for position, item in enumerate(self.items):
            step_number = len(self.positions)
            if step_number % STATE_EVERY == 0 and step_number not in self.states:
                self.states[step_number] = _save(state)
            summary = state.step(item)
            if summary is None:
                continue
            kind, fid, lineno, label, changed, extra = summary
            frame = state.frames.get(fid) or state.closed
            if frame is not None and frame.fid != fid:
                frame = None
            depth = state.depth(fid) if frame is not None else 0
            self.positions.append(position)
            self.summaries.append((
                kind, label, state.wall, state.mono,
                frame.thread if frame else (extra or {}).get("thread", "?"),
                frame.task if frame else None, frame.function if frame else None,
                frame.filename if frame else None, lineno, depth, changed, extra, state.tasks))
            if len(self.positions) > count:
                break  # more steps than the row claims: reported by the caller

    def stack_at(self, number: int, fid: int) -> list[chunks.LiveFrame]:
        """Copies of the frames of step ``number`` (0-based within the chunk) in frame
        ``fid``, outermost first."""
        with self._cursor_lock:
            return self._replay_to(number).stack(fid)

    def stack_view(self, number: int, fid: int) -> list[tuple]:
        """The frames of step ``number`` in frame ``fid`` as plain tuples, outermost first:
        ``(function, filename, lineno, ((name, stored value), ...))`` — what two steps are
        compared by when they are the same (``replay.traced_compare``), without building
        frames or values."""
        with self._cursor_lock:
            state = self._replay_to(number)
            chain: list[tuple] = []
            seen: set[int] = set()
            current = state.frames.get(fid) or (
                state.closed if state.closed and state.closed.fid == fid else None)
            while current is not None and current.fid not in seen:
                seen.add(current.fid)
                chain.append((current.function, current.filename, current.lineno,
                              tuple(current.locals.items())))
                current = state.frames.get(current.parent)
            chain.reverse()
            return chain

    def _replay_to(self, number: int) -> chunks.ChunkState:
        """The chunk state right after its step ``number``; called under ``_cursor_lock``.

        The state is only good until the next call: reading steps in order (replay compares
        every one) goes on from the previous step instead of replaying from the nearest saved
        state each time."""
        cursor = self._cursor
        base = number - number % STATE_EVERY
        if cursor is not None and base <= cursor[0] <= number:
            state, start = cursor[1], self.positions[cursor[0]] + 1
        else:
            frames, tasks, wall, mono = self.states[base]
            state = chunks.ChunkState()
            state.frames = {fid: f.copy() for fid, f in frames.items()}
            state.tasks, state.wall, state.mono = tasks, wall, mono
            start = self.positions[base - 1] + 1 if base else 0
        for item in self.items[start:self.positions[number] + 1]:
            state.step(item)
        self._cursor = (number, state)
        return state


def _save(state: chunks.ChunkState) -> tuple:
    frames = {fid: f.copy() for fid, f in state.frames.items()
              if state.closed is None or fid != state.closed.fid}
    return frames, state.tasks, state.wall, state.mono


class ChunkSteps:
    """Access to one timeline's chunked steps, with a small cache of decoded chunks."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self._cache: OrderedDict[tuple[str, int], DecodedChunk] = OrderedDict()

    @property
    def available(self) -> bool:
        return self.timeline.engine.has_trace_chunks()

    def _chunk(self, run_id: str, first: int, count: int, data: bytes | None) -> DecodedChunk:
        key = (run_id, first)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        if data is None:
            data = self.timeline.engine.chunk_data(run_id, first)
            if data is None:
                raise IntegrityError(self.timeline.path, f"trace chunk at step {first} vanished")
        first, count, data = sanitize.chunk_row(self.timeline.path, first, count, data)
        decoded = DecodedChunk(first, count, data, self.timeline.path)
        self._cache[key] = decoded
        if len(self._cache) > _CACHE_CHUNKS:
            self._cache.popitem(last=False)
        return decoded

    def step(self, run: Run, index: int) -> TracedStep | None:
        """The traced step ``index`` of ``run``, or None when no chunk holds it."""
        if not self.available:
            return None
        found = self.timeline.engine.chunk_at(run.id, index)
        if found is None:
            return None
        first, count, _ = sanitize.chunk_row(self.timeline.path, *found)
        if index >= first + count:
            return None
        return TracedStep(run, self._chunk(run.id, first, count, None), index - first)

    def range(self, run: Run, start: int, stop: int) -> list[TracedStep]:
        """Traced steps with ``start <= index < stop``, in order."""
        if not self.available:
            return []
        rows = self.timeline.engine.chunks_overlapping(run.id, start, stop)
        out: list[TracedStep] = []
        for row in rows:
            first, count, _ = sanitize.chunk_row(self.timeline.path, *row)
            chunk = self._chunk(run.id, first, count, None)
            for number in range(max(start - first, 0), min(stop - first, count)):
                out.append(TracedStep(run, chunk, number))
        return out


class TracedStep(Step):
    """A step stored in a trace chunk; the same attributes as ``Step``, plus ``tasks`` (the
    pending asyncio tasks then, see ``async_tasks``, or None)."""

    def __init__(self, run: Run, chunk: DecodedChunk, number: int) -> None:
        (kind, label, wall, mono, thread, task, function, filename, lineno, depth, changed,
         extra, tasks) = chunk.summaries[number]
        row = (chunk.first + number, kind, label, wall, mono, thread, task, function,
               filename, lineno, depth, None, None, None, changed, None)
        super().__init__(run, row)
        self._chunk = chunk
        self._number = number
        self._extra_values = extra or {}
        self.tasks = tasks

    def stack_view(self) -> list[tuple]:
        """This step's stack as plain tuples (``DecodedChunk.stack_view``); [] for a gap."""
        if self.kind == "gap":
            return []
        item = self._chunk.items[self._chunk.positions[self._number]]
        return self._chunk.stack_view(self._number, _fid_of(item))

    def read_as_raised(self) -> None:
        """Read this step as an exception leaving its frame (label ``"raised"``, no return
        value): what a ``return`` step of None was in recordings made before the tracer told
        the two apart (replay compares such a step with its replay's ``raised`` one)."""
        self.label = "raised"
        self._extra_values = {}
        self.__dict__.pop("extra", None)

    @property
    def stored_extra(self) -> dict[str, Any]:
        """``return``/``exception`` as stored in the chunk (inline scalars or blob keys)."""
        return self._extra_values

    @cached_property
    def frames(self) -> tuple[Frame, ...]:
        """The saved stack, outermost first: this step's frame and its callers'."""
        if self.kind == "gap":
            return ()
        item = self._chunk.items[self._chunk.positions[self._number]]
        out = []
        for live in self._chunk.stack_at(self._number, _fid_of(item)):
            record = {"function": live.function, "filename": live.filename,
                      "lineno": live.lineno, "code": live.code_hash,
                      "source": live.source_hash,
                      "locals": [[name, value_ref(value)]
                                 for name, value in live.locals.items()]}
            out.append(TracedFrame(self.run.timeline, record, step=self))
        return tuple(out)

    @cached_property
    def extra(self) -> dict[str, Value]:
        """``return`` (return steps), ``exception`` (exception steps); empty otherwise."""
        if self.kind == "gap":
            return {}
        return {name: Value(self.run.timeline, name, value_ref(value), step=self)
                for name, value in self._extra_values.items()}


class TracedFrame(Frame):
    """A frame rebuilt from a trace chunk. Its ``key`` (the content hash of its record, as a
    stored frame's) is computed when asked for: comparing steps never needs it."""

    def __init__(self, timeline: Timeline, record: dict[str, Any], *, step: Step) -> None:
        super().__init__(timeline, "", record, step=step)
        self._record = record
        del self.__dict__["key"]

    @cached_property
    def key(self) -> str:  # type: ignore[override]
        return content_hash(canonical_json(self._record)).hex()


def _fid_of(item: Any) -> int:
    if type(item) is int:
        return item >> chunks.LINE_BITS
    code = item[0]
    if code >= 0:
        return code >> chunks.LINE_BITS
    return item[1] if code in (chunks.OPEN, chunks.RETURN, chunks.EXCEPTION) else 0
