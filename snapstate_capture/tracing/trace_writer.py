"""The trace writer process: reads the traced-step stream on stdin and stores it.

Started by ``trace_stream.Stream`` as ``python -m snapstate_capture.tracing.trace_writer FILE
RUN_ID`` (for a run into a database store ``URL RUN_ID SPOOL``: the steps go into the
recorder's spool, ``capture.spooled``). Input: messages ``uint32 length`` + ``marshal`` data, each either a list of stream
items, the string ``"index?"`` (answered on stdout with the next step index, for
``checkpoint()``'s return value), ``("fork", FILE, RUN_ID, TAIL)`` (a traced replay going
live: the stream goes on into that fork, ``trace_fork.py``; answered ``forked N`` or
``refused REASON``) or ``("end", status, error_json)``. Steps are stored in chunks
(``store.chunks``) of up to ``CHUNK_STEPS`` steps, or sooner when ``CHUNK_SECONDS`` passed, so a
recording can be watched from another terminal (``snapstate ls`` shows the count growing).

On end of input without an ``end`` message (the recorder was killed) everything received is
stored and the run is left ``running``, which readers report as ``crashed``.
"""

from __future__ import annotations

import json
import marshal
import os
import queue
import struct
import sys
import threading
import time
from typing import Any

from ..options import CaptureOptions
from ..store.trace_items import BLOB, FULL, LINE_BITS, LINE_MASK, VALUE
from .value_encoder import resolve_marshaled
from ..store import chunks
from ..errors import WriteFailed
from ..store.step_record import StepRecord
from ..store.writer import TimelineWriter

CHUNK_SECONDS = 0.25
_HEADER = struct.Struct("<I")


class ChunkBuilder:
    """Accumulates stream items into chunks and writes them through a ``TimelineWriter``."""

    def __init__(self, writer: TimelineWriter, run_id: str) -> None:
        self.writer = writer
        self.run_id = run_id
        self.state = chunks.ChunkState()
        self.header = self.state.header()
        self.items: list[Any] = []
        self.count = 0
        self.blobs: dict[str, bytes] = {}
        #: of ``blobs``: the keys that are manifests, and the delta base of a blob where one
        #: was given (``BLOB`` items of five elements: a chunked value's pieces)
        self.manifests: set[str] = set()
        self.bases: dict[str, str] = {}
        self.opened = time.monotonic()
        self.options = CaptureOptions()
        self.values: dict[str, tuple] = {}  # marshal-copy key -> (preview, payload, serializer)

    def feed(self, batch: list[Any]) -> None:
        """Take one batch of stream items (line steps on a fast path: the writer must keep up
        with the program)."""
        state = self.state
        frames = state.frames
        items = self.items
        count = self.count
        limit = chunks.CHUNK_STEPS
        stream = iter(batch)
        for item in stream:
            if type(item) is str:
                # the flat common line step: name, value (a scalar), key (see trace_stream);
                # stored in the chunk as the tuple (key, name, value)
                try:
                    value = next(stream)
                    key = next(stream)
                except StopIteration:  # a truncated batch: never from our recorder
                    break
                if state.closed is not None:
                    item = (key, item, value)  # the general path below handles it
                else:
                    frame = frames.get(key >> LINE_BITS)
                    if frame is not None:
                        frame.lineno = key & LINE_MASK
                        frame.locals[item] = value
                    items.append((key, item, value))
                    count += 1
                    if count >= limit:
                        items, count = self._next_chunk(count)
                    continue
            if type(item) is int:
                frame = frames.get(item >> LINE_BITS)
                if frame is not None:
                    frame.lineno = item & LINE_MASK
                if state.closed is not None:
                    state.step(item)
                count += 1
                items.append(item)
            else:
                code = item[0]
                if code == VALUE:
                    self._value(item)
                    continue
                if len(item) == 3 and code >= 0 and state.closed is None:
                    # the common line step (key, name, value): inlined, the writer must keep up
                    value = item[2]
                    if type(value) is tuple:
                        if len(value) == 2:
                            item = self._resolve(item)
                            value = item[2]
                        elif not value:
                            value = None
                    frame = frames.get(code >> LINE_BITS)
                    if frame is not None:
                        frame.lineno = code & LINE_MASK
                        if value is None and type(item[2]) is tuple:
                            frame.locals.pop(item[1], None)
                        else:
                            frame.locals[item[1]] = value
                    count += 1
                    items.append(item)
                    if count >= limit:
                        items, count = self._next_chunk(count)
                    continue
                if code != BLOB and code != FULL and self._has_marks(item):
                    item = self._resolve(item)
                if code >= 0 and state.closed is None:
                    frame = frames.get(code >> LINE_BITS)
                    if frame is not None:
                        frame.lineno = code & LINE_MASK
                        chunks.apply_pairs(frame.locals, item, 1)
                    count += 1
                    items.append(item)
                elif code == BLOB:
                    self.blobs[item[1]] = item[2]
                    if len(item) == 5:
                        self._blob_kind(item)
                    continue
                elif code == FULL:
                    items, count = self._next_chunk(count)
                    self._write_full(item[1])
                    continue
                else:
                    if state.step(item) is not None:
                        count += 1
                    items.append(item)
            if count >= limit:
                items, count = self._next_chunk(count)
        self.count = count
        if count and time.monotonic() - self.opened > CHUNK_SECONDS:
            self.write_chunk()

    def _next_chunk(self, count: int) -> tuple[list[Any], int]:
        """Store the chunk being built (``count`` steps so far); return the new one's items and
        step count."""
        self.count = count
        self.write_chunk()
        return self.items, 0

    def _value(self, item: Any) -> None:
        _, key, name, data = item
        if key not in self.values:
            ref, blobs = resolve_marshaled(data, name, self.options)
            self.values[key] = ref
            self.blobs.update(blobs)

    def _blob_kind(self, item: Any) -> None:
        """Note a ``(BLOB, key, data, manifest, base)`` item's manifest flag and delta base."""
        _, key, _, manifest, base = item
        if manifest:
            self.manifests.add(key)
        if base:
            self.bases[key] = base

    @staticmethod
    def _has_marks(item: Any) -> bool:
        if len(item) == 3:  # the common line step: (key, name, value)
            value = item[2]
            return type(value) is tuple and len(value) == 2
        return any(type(v) is tuple and len(v) == 2 and v[0] == "m" for v in item)

    def _resolve(self, item: Any) -> tuple:
        """``item`` with every ``("m", key)`` mark replaced by the value's reference."""
        values = self.values
        return tuple(values.get(v[1], v) if type(v) is tuple and len(v) == 2 and v[0] == "m"
                     else v for v in item)

    def write_chunk(self) -> None:
        if not self.count:
            if self.blobs or self.items:
                # Items that are not steps (task lists, time marks) wait for the next chunk.
                pass
            return
        data = chunks.encode(self.header, self.items)
        self.writer.append_chunk(self.run_id, self.count, data, self.blobs,
                                 manifests=self.manifests, bases=self.bases)
        self.header = self.state.next_header()
        self.items, self.count, self.blobs = [], 0, {}
        self.manifests, self.bases = set(), {}
        self.opened = time.monotonic()

    def _write_full(self, fields: dict[str, Any]) -> None:
        blobs = dict(fields.pop("blobs", {}) or {})
        manifests = set(fields.pop("manifests", ()) or ()) | self.manifests
        bases = {**self.bases, **(fields.pop("bases", {}) or {})}
        effect = fields.pop("effect", None)
        blobs.update(self.blobs)
        self.blobs, self.manifests, self.bases = {}, set(), {}
        record = StepRecord(**fields, blobs=blobs, manifests=manifests, bases=bases)
        self.writer.append_step(self.run_id, record, effect=effect)


def _read_exact(stream: Any, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _drain(stream: Any, inbox: queue.SimpleQueue) -> None:
    """Read every message from ``stream`` into ``inbox`` as soon as it arrives, then ``None``.

    The recorder's hand-over never waits for this process to store the previous batch: what it
    wrote is out of its memory at once (so a SIGKILL of the program loses only the items of the
    last flush interval) and the program's flusher thread is not held up by a slow disk.
    """
    try:
        while True:
            head = _read_exact(stream, _HEADER.size)
            if head is None:
                break
            body = _read_exact(stream, _HEADER.unpack(head)[0])
            if body is None:
                break
            inbox.put(body)
    except (OSError, ValueError):
        pass
    finally:
        inbox.put(None)


def _signer() -> Any:
    """The user's run signer (runs are signed whenever a user key exists), else unsigned."""
    from ..trust.keys import find_key
    from ..trust.signing import RunSigner

    try:
        return RunSigner(find_key())
    except Exception:  # noqa: BLE001 - an unusable key: the recorder already warned
        return RunSigner(None)


def _open(path: str, run_id: str, spool: str | None, notes: list[str]) -> Any:
    """The run's writer: a ``TimelineWriter`` on ``path``, or with ``spool`` (a run traced
    into a database store) the recorder's spool, taken over: steps go on into it and a spool
    writer process this process starts stores them, so the program never waits on the
    database. ``notes``: what the spool's writer has to say at the end (for the recorder)."""
    if spool is None:
        writer: Any = TimelineWriter(path, signer=_signer())
    else:
        from pathlib import Path

        from ..capture.spooled import SpoolingWriter

        writer = SpoolingWriter(path, adopt=Path(spool), say=notes.append)
    writer.attach_run(run_id)
    return writer


def main(argv: list[str]) -> int:
    """Serve one run: ``argv`` = ``[FILE, RUN_ID]`` or ``[URL, RUN_ID, SPOOL]``. Returns the
    exit code."""
    path, run_id, spool = (*argv, None)[:3]
    notes: list[str] = []
    writer = _open(path, run_id, spool, notes)
    builder = ChunkBuilder(writer, run_id)
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    # The drain thread needs the interpreter lock after every pipe read while this thread
    # stores; a short switch interval keeps the recorder's writes from waiting on it.
    sys.setswitchinterval(0.001)
    threading.Thread(target=_drain, args=(sys.stdin.buffer, inbox), name="snapstate-drain",
                     daemon=True).start()
    ended = False
    cut: dict[str, Any] | None = None  # a write failed: why and where; nothing more is stored

    def guarded(work: Any) -> None:
        nonlocal cut
        if cut is not None:
            return
        try:
            work()
        except WriteFailed as failure:  # the recorder says it, at its next step or its end
            cut = {"reason": failure.problem,
                   "at_step": builder.writer.next_index(builder.run_id)}

    try:
        while True:
            body = inbox.get()
            if body is None:
                break
            message = marshal.loads(body)
            if isinstance(message, list):
                guarded(lambda: builder.feed(message))
            elif isinstance(message, tuple) and message and message[0] == "options":
                import pickle

                builder.options = pickle.loads(message[1])  # from our own recorder process
            elif message == "index?":
                guarded(builder.write_chunk)
                sys.stdout.write(f"cut {cut['at_step']} {cut['reason']}\n" if cut is not None
                                 else f"{builder.writer.next_index(builder.run_id)}\n")
                sys.stdout.flush()
            elif isinstance(message, tuple) and message and message[0] == "fork":
                sys.stdout.write(_fork(builder, path, message, cut is not None) + "\n")
                sys.stdout.flush()
            elif isinstance(message, tuple) and message and message[0] == "end":
                guarded(builder.write_chunk)
                _, status, error = message
                ending = json.loads(error) if error else None
                if cut is not None:  # the run says it was cut short, and why
                    status, ending = "truncated", _cut_end(cut, status, ending)
                try:
                    builder.writer.end_run(builder.run_id, status, ending)
                except WriteFailed:
                    pass  # said once already: the end could not be written either
                ended = True
                break
    finally:
        if cut is None:
            try:
                builder.write_chunk()
            except WriteFailed:
                pass
        builder.writer.close()
    if ended:  # the recorder waits for this line, not for our exit
        note = f"ended note {notes[-1]}\n" if notes else "ended\n"
        sys.stdout.write(f"ended cut {cut['at_step']} {cut['reason']}\n" if cut is not None
                         else note)
        sys.stdout.flush()
    return 0 if ended else 3


def _fork(builder: ChunkBuilder, scratch: str, message: tuple, cut: bool) -> str:
    """Answer a ``("fork", FILE, RUN_ID, TAIL)`` message (``trace_fork.py``): ``forked N``
    (the fork's next index) or ``refused REASON``, the builder left as it was then."""
    if cut:
        return "refused the scratch recording was cut short"
    from .trace_fork import fork_into

    _, path, fork_id, tail = message
    try:
        return f"forked {fork_into(builder, scratch, path, fork_id, int(tail), _signer())}"
    except Exception as exc:  # noqa: BLE001 - said to the replay, which ends with it
        return f"refused {type(exc).__name__}: {exc}".replace("\n", " ")


def _cut_end(cut: dict[str, Any], status: str, error: Any) -> dict[str, Any]:
    """The ``error`` of a run cut short here: the reason and step, how the program ended
    (``finished``/``failed``) and, if it failed, its exception (``status``/``error`` as the
    recorder sent them)."""
    recorded = error if isinstance(error, dict) else {}
    if status == "truncated":
        ended, exception = recorded.get("ended", "finished"), recorded.get("exception")
    else:
        ended, exception = status, recorded if status == "failed" else None
    return {**cut, "ended": ended, **({"exception": exception} if exception else {})}


if __name__ == "__main__":
    os.environ["SNAPSTATE_DISABLE"] = "1"
    raise SystemExit(main(sys.argv[1:]))
