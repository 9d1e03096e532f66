"""The traced-step stream: compact step items buffered in memory, handed to a writer process.

Per-line steps must cost well under a microsecond (issue 6 point 7), so the tracer does not write
SQL, JSON or hashes on its hot path. It appends small items to one list (``Stream.items``,
shared by every thread: ``list.append`` is atomic, so the order of the list is the order of the
steps). The process's flusher thread (``flusher.py``) hands the list over every
``FLUSH_SECONDS`` as one ``marshal`` message to a writer process (``store.trace_writer``),
which stores steps in chunks (``store.chunks``).

Item forms (all ``marshal``-able; see ``store.chunks`` for the stored form):

- ``int k`` — a ``line`` step of frame ``k >> LINE_BITS`` at line ``k & LINE_MASK``, no change;
- ``(k, name, value, ...)`` — a ``line`` step that rebinds or changed those locals;
- ``name, value, k`` — three flat items, the common case of the former with one scalar: a str
  item is always a name whose value is the next item and whose step key follows (the tracer
  adds the three in one ``list.extend``, so no other thread's item lands between them);
- ``(CODE, ...)`` tuples with a negative first element — call, return, exception, gap steps and
  the records that are not steps (blobs, marshal copies of values, frame openings,
  pending-task lists, time marks).
  ``(REFRESH, fid, lineno, name, value, ...)`` is one of the latter: in call tracing, a caller's
  line and changed locals, caught up at its callee's call so the callee's steps show the caller
  as it is then, not as it was at its own call event.

A value in a step is a *scalar* kept as itself (int, float, bool, None, a short str) or a
reference tuple ``(preview_hash, payload_hash | None, serializer | None)`` to blobs sent in
``BLOB`` items first, or ``("m", key)`` for a value sent as a marshal copy in a ``VALUE`` item
(the writer replaces it by the former before storing); ``()`` marks a deleted name.

Crash safety (DESIGN.md "The timeline file", documented choice): data already handed to the
writer process survives a SIGKILL of the recorder — a thread there reads the pipe as soon as data
arrives and the writer stores everything it read. Traced steps still in the recorder's list are
lost then: those of the last hand-over interval — ``FLUSH_SECONDS`` (20 ms) plus the time the
flusher thread waits for the interpreter lock, measured at 50 ms median and under 0.2 s worst
while a traced CPU-bound loop holds it (``bench``-style loop, 4 M line steps) — the price of not
making a system call per line. ``os._exit`` is wrapped while tracing so it hands the list over
first: nothing is lost there. Explicit ``checkpoint`` steps are handed over at once, so for them
"only the step in flight is lost" holds as before. Ordinary ends (return, ``sys.exit``,
exceptions, SIGINT, SIGTERM via ``snapstate record``) flush everything.
"""

from __future__ import annotations

import atexit
import marshal
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
from typing import Any

from ..clocks import Clocks
from ..capture.chunked import chunk_size
from ..store.hashing import canonical_json, content_hash
from ..capture.detectors import STATE_ELSEWHERE, function_detector  # checkpoint path's
from ..capture.lent_captures import clean as clean_capture
from .flusher import Flusher
from ..options import CaptureOptions
from ..store.trace_items import BLOB, TIME, VALUE
from ..values import capture_value, secret_shapes
from ..values.payload import caught_warnings
from ..values.addresses import ADDRESS_MIN, holds_stack_address, local_address
from ..values.identity import live_code
from ..values.preview import MACHINERY, PreviewBuilder
from ..values.reducers import REDUCERS, REFUSED_BY_TYPE
from .bounded import BigValues, bounded_preview, key_holds_local_class, shallow_key


#: Seconds between hand-overs to the writer process (bounds what a SIGKILL can lose).
FLUSH_SECONDS = 0.02
#: Strings up to this length travel inline as scalars; longer ones become blobs.
INLINE_STR = 200
SCALAR_TYPES = frozenset({int, float, bool, type(None)})
#: Ints from here up may be an object's address: the tracer asks ``addressed`` before it
#: stores one inline.
ADDRESS_FLOOR = ADDRESS_MIN


def addressed(value: int) -> bool:
    """Whether the int ``value`` is the id of a local on the stack
    (``addresses.local_address``: ``key = id(node)``, pyparsing's ``__hash__`` returning
    ``id(self)``): stored as a value of its own, whose identity digest names that local —
    never inline, where it would compare by its number, another in every process."""
    return local_address(value) is not None
_HEADER = struct.Struct("<I")
#: Buffer of the pipe to the writer process (Linux ``F_SETPIPE_SZ``; 1 MiB is the default cap).
PIPE_BYTES = 1 << 20
#: A value whose marshal copy is longer than this is bounded at traced events (one level, no
#: payload: ``tracing/bounded.py``) instead of being hashed, sent and captured whole.
MARSHAL_BYTES = 256 * 1024
#: A frame's exact list or dict is captured by chunks (``chunked_locals.py``) from one chunk
#: (``capture.chunked.chunk_size`` elements: 256 strings or numbers, 16 containers) and this
#: many elements up. Measured with ``bench/bench_traced_appends.py`` (1,000 rows): from one
#: chunk, 222 µs of CPU a step with the writer's and a 0.97 MB file; from four, 320 µs and
#: 1.47 MB. Below 64 elements the whole-value path costs the program less (~23 µs against
#: ~60-130 µs for 70 dicts appended to).
CHUNKED_MIN_LENGTH = 64
#: A held stream (``Stream(begin=...)``) holding more than this many bytes is released.
HELD_BYTES = 64 << 20


class ValueEncoder:
    """Turns non-scalar values into reference tuples, sending each new blob once.

    ``encode(value, name)`` returns a scalar unchanged, else a reference. Values made only of
    builtin types that ``marshal`` takes (dicts, lists, tuples, sets, str, bytes, numbers — the
    JSON-like state agents mostly hold) are *copied* with ``marshal`` (C speed, a few µs) and
    sent as ``VALUE`` items; the writer process builds their preview and payload from the copy,
    in parallel with the program, and the step holds ``("m", key)`` until it does. Anything
    else is captured here (preview + payload, ``values.capture_value``) and sent as ``BLOB``
    items, the step holding ``(preview, payload, serializer)``. Equal contents captured twice
    give the same reference without a second capture (a bounded cache by content hash).
    Never raises.

    Within one trace event (``begin_event``/``end_event``, the tracer's call events: the caller
    caught up, the callee's locals taken; a return: the frame's locals, then its return value)
    the program does not run, so an object met twice — the caller's ``self`` is the callee's
    ``self`` — is captured once: the second capture under the same name returns the first
    one's reference, and a returned local (``capture(..., any_name=True)``) its local's.
    """

    CACHE_LIMIT = 50_000

    def __init__(self, options: CaptureOptions, emit: Any) -> None:
        self.options = options
        self.emit = emit
        #: the thread of the open event (``begin_event``), 0 between events; the tracer's hot
        #: paths open and close events by setting ``event`` and ``memo`` as those two do
        self.event = 0
        #: during one event, made at its first capture: ``(id, name) -> (value, ref)`` and
        #: ``id -> (value, ref)`` (the values held, so no id is reused), for the thread
        #: ``event`` only; None until then and between events
        self.memo: dict[Any, tuple[Any, tuple]] | None = None
        self.sent: set[str] = set()
        self._redacted: dict[str, tuple] = {}
        self._cache: dict[str, tuple] = {}
        self._big = BigValues(options.values, options.bound_by_value, options.probe_limit)
        self._shallow: dict[tuple, tuple] = {}
        #: the preview keys of the bounded forms made (``bounded``): a frame's value whose last
        #: capture was one of them is bounded again while it is the same object
        #: (``CallFrame._changed_ref``)
        self.bounded_keys: set[str] = set()
        #: the repr a bounded preview shows (a bound method, a function, a class of its own repr)
        self._bounded_repr = PreviewBuilder(self._big.options).repr_of
        self._builder = PreviewBuilder(options.values)
        #: ``(class, name, preview JSON) -> ref`` of values captured as their preview alone
        self._shown: dict[tuple, tuple] = {}
        #: big lists and dicts of traced frames, by chunks (``chunked_locals.py``), made at
        #: the first one
        self._chunked: Any = None
        #: captures shared with the run's explicit steps (``capture/lent_captures.py``), set
        #: by the recorder
        self.lent: Any = None

    def encode(self, value: Any, name: str | None) -> Any:
        return value if _inline(value) else self.capture(value, name)

    def redacted(self, value: Any) -> tuple:
        """The reference of a redacted preview (type only), shared by all values of a type."""
        from ..values.preview import redacted_preview

        preview = redacted_preview(value)
        ref = self._redacted.get(preview["type"])
        if ref is None:
            ref = (self._blob(canonical_json(preview)), None, None)
            self._redacted[preview["type"]] = ref
        return ref

    def begin_event(self) -> bool:
        """Start remembering this thread's captures until ``end_event`` (False, and nothing
        remembered, while another event is open: another thread's)."""
        if self.event:
            return False
        self.event = threading.get_ident()  # the memo itself waits for a first capture
        return True

    def end_event(self) -> None:
        """Forget the event's captures (after a ``begin_event`` that returned True)."""
        self.event = 0
        self.memo = None

    def capture(self, value: Any, name: str | None, any_name: bool = False) -> tuple:
        """Capture one value (see the class docstring); returns its reference tuple.
        ``any_name``: within an event, take the capture the same object got under any name
        (a returned local: the name shows only in the path of a placeholder)."""
        if name is not None and self.options.values.redacts(name, value):
            return self.redacted(value)
        event = self.event
        if not event or event != threading.get_ident():
            return self._capture(value, name)
        memo = self.memo
        if memo is None:
            memo = self.memo = {}
        key = (id(value), name)
        hit = memo.get(key)
        if hit is None and any_name:
            hit = memo.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        ref = self._capture(value, name)
        memo[key] = memo[id(value)] = (value, ref)
        return ref

    def _capture(self, value: Any, name: str | None) -> tuple:
        try:
            data = marshal.dumps(value)
        except (ValueError, TypeError, RecursionError):
            data = None
        if data is not None and len(data) > MARSHAL_BYTES:
            # a big list or dict of plain data: hashed and, when changed, sent and captured
            # whole at every event (boltons' BarrelList: 0.5 MB a call, 2.4 GB for one
            # passing test); bounded as big objects are (``bounded.py``)
            return self.bounded(value, name)
        if data is not None and self.options.payloads and not holds_stack_address(value):
            # (a set of ids already seen is captured as an object: its ids compare as
            # addresses, ``values/addresses.py``, where its plain bytes compare by number)
            key = content_hash(data).hex()
            ref = self._cache.get(key)
            if ref is None:
                ref = ("m", key)
                self.emit((VALUE, key, name, data))
                self._remember(key, ref)
            return ref
        cls = type(value)
        if MACHINERY.lookup(cls) is not None or REDUCERS.lookup(cls) in REFUSED_BY_TYPE:
            return self._shown_ref(value, name)
        if self._big.is_big(value):
            return self.bounded(value, name)
        pickled = True
        if cls in STATE_ELSEWHERE or cls is int:  # its pickle does not change with it, or
            # an int named by the local it is the id of (``addressed``), here now: no cache
            digest, pickled = None, False
        else:
            try:
                with caught_warnings():  # a class's __reduce__ warning: not the program's
                    digest = content_hash(pickle.dumps(value, 5)).hex()
            except Exception:  # noqa: BLE001 - capture_value reports why
                digest, pickled = self._detector_digest(value, name), False
        if digest is not None and digest in self._cache:
            return self._cache[digest]
        captured = capture_value(value, name=name, options=self.options.values,
                                 payloads=self.options.payloads)
        preview = canonical_json(captured.preview)
        preview_key = self._blob(preview)
        payload_key = self._blob(captured.payload) if captured.payload is not None else None
        ref = (preview_key, payload_key, captured.serializer)
        if digest is not None:
            self._remember(digest, ref)
            if (pickled and self.lent is not None and captured.payload is not None
                    and clean_capture(captured.preview, captured.error)):
                self.lent.keep(value, digest, ref, captured.payload, preview)  # for checkpoints
        return ref

    def take_offers(self, offers: list[tuple[bytes, dict[str, Any]]]) -> None:
        """Take an explicit step's clean, transparent captures ``[(plain pickle, value ref)]``
        into the content cache, keyed by the pickle's digest, once that step is with the writer
        (``capture/lent_captures.py``)."""
        for detector, ref in offers:
            digest = content_hash(detector).hex()
            if digest not in self._cache:
                self._remember(digest, (ref["p"], ref.get("b"), ref.get("s")))

    def chunked(self, fid: int, name: str, value: Any) -> tuple | None:
        """The reference of frame ``fid``'s list or dict ``name`` (exact, at least
        ``CHUNKED_MIN_LENGTH`` long) captured by chunks, at the cost of what changed since its
        last capture there (``ChunkedLocals.ref``); None when it is not taken (capture it
        whole): shorter than a chunk, or refused there, or ``options.chunked_locals`` off."""
        if not self.options.payloads or not self.options.chunked_locals:
            return None
        per_chunk = chunk_size(value)
        if len(value) < max(per_chunk, CHUNKED_MIN_LENGTH):
            return None
        if self._chunked is None:
            from .chunked_locals import ChunkedLocals  # brings the checkpoint path's cache

            self._chunked = ChunkedLocals(self.options, self.send_blob)
        return self._chunked.ref(fid, name, value, per_chunk)

    def forget_chunked(self, fid: int, names: set[str]) -> None:
        """Frame ``fid`` finished: let its chunked captures of ``names`` go."""
        if self._chunked is not None:
            self._chunked.forget(fid, names)

    def _detector_digest(self, value: Any, name: str | None) -> str | None:
        """The cache key of a value plain pickle refuses (a part it cannot write: a generator
        in an ``itertools.chain``, a lock, a lambda): the digest of its change detector
        (``capture.detectors.function_detector``, which writes such parts as what a capture
        makes of them), with the name, which the capture's placeholders show. None when there
        is none: the value is then captured whole at every event, as before — a chain of two
        generator expressions cost ~0.4 ms at each of them (more-itertools' ``dft``)."""
        try:
            with caught_warnings():
                detector = function_detector(value, self._builder)
        except Exception:  # noqa: BLE001 - no detector: captured whole
            return None
        if detector is None:
            return None
        return "d" + content_hash(repr(name).encode() + b"\x00" + detector).hex()

    def _shown_ref(self, value: Any, name: str | None) -> tuple:
        """The reference of a value captured as its preview alone — framework machinery (a
        client), a live object refused by its type (a lock, an open file): no payload, a
        placeholder whose reason is its type's, so the capture is what its class, name, preview
        and — for a generator, whose identity digest holds it — code make (two generator
        expressions of one function differ in nothing else, and may take turns at one address).
        Cached by them: an unchanged one costs a preview, not a capture (a
        caller holding a client paid ~50 µs at every call's catch-up)."""
        key = (type(value), name, live_code(value), canonical_json(self._builder.build(value)))
        ref = self._shown.get(key)
        if ref is None:
            captured = capture_value(value, name=name, options=self.options.values,
                                     payloads=self.options.payloads)
            ref = (self._blob(canonical_json(captured.preview)),
                   self._blob(captured.payload) if captured.payload is not None else None,
                   captured.serializer)
            if len(self._shown) >= self.CACHE_LIMIT:
                self._shown.clear()
            self._shown[key] = ref
        return ref

    def bounded(self, value: Any, name: str | None) -> tuple:
        """The reference of a big object's bounded form (``bounded.py``): a one-level preview
        marked ``"bounded"``, no payload."""
        key = shallow_key(value, self._big.options.max_items, self._bounded_repr)
        ref = self._shallow.get(key) if key is not None else None
        if ref is None:
            text = key[1] if key is not None and type(key[1]) is str else None
            ref = (self._blob(canonical_json(bounded_preview(value, self._big.options, text,
                                                             self._big.note))),
                   None, None)
            if key is not None and not key_holds_local_class(key):
                if len(self._shallow) >= self.CACHE_LIMIT:
                    self._shallow.clear()
                    self.bounded_keys.clear()
                self._shallow[key] = ref
            self.bounded_keys.add(ref[0])
        return ref

    def _remember(self, key: str, ref: tuple) -> None:
        if len(self._cache) >= self.CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = ref

    def _blob(self, data: bytes) -> str:
        key = content_hash(data).hex()
        self.send_blob(key, data)
        return key

    def send_blob(self, key: str, data: bytes, manifest: bool = False,
                  base: str | None = None) -> None:
        """Hand blob ``key`` to the writer, once per run: a ``(BLOB, key, data)`` item, or
        ``(BLOB, key, data, manifest, base)`` for a manifest or a blob with a delta base (a
        chunked value's pieces: ``chunked_locals.py``)."""
        if key in self.sent:
            return
        self.sent.add(key)
        self.emit((BLOB, key, data, manifest, base) if manifest or base is not None
                  else (BLOB, key, data))


def _inline(value: Any) -> bool:
    """Whether ``value`` travels in a step as itself: a number (but an int that is the id of
    a local: ``addressed``), bool, None or a short str without a credential's shape."""
    cls = type(value)
    if cls is int:
        return value < ADDRESS_FLOOR or not addressed(value)
    return cls in SCALAR_TYPES or (cls is str and len(value) <= INLINE_STR
                                   and not secret_shapes.find(value))


def resolve_marshaled(data: bytes, name: str | None, options: CaptureOptions
                      ) -> tuple[tuple, dict[str, bytes]]:
    """In the writer process: the reference and blobs of a ``VALUE`` item's marshal copy.

    ``marshal.loads`` only rebuilds builtin data (no code runs); the preview and payload are
    made by ``values.capture_value`` exactly as the recorder would have made them.
    """
    blobs: dict[str, bytes] = {}

    def blob(raw: bytes) -> str:
        key = content_hash(raw).hex()
        blobs[key] = raw
        return key

    try:
        value = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        preview = {"type": "?", "repr": "<capture failed>",
                   "placeholder": {"reason": "bad marshal copy", "path": name or ""}}
        return (blob(canonical_json(preview)), None, None), blobs
    captured = capture_value(value, name=name, options=options.values,
                             payloads=options.payloads)
    preview_key = blob(canonical_json(captured.preview))
    payload_key = blob(captured.payload) if captured.payload is not None else None
    return (preview_key, payload_key, captured.serializer), blobs


class Stream:
    """The buffer of traced items of one run and the writer process that stores them.

    ``start()`` spawns ``python -m snapstate_capture.tracing.trace_writer FILE RUN_ID`` (its own
    session, so a Ctrl-C meant for the program does not kill it before it drained). ``items`` is
    the shared list the tracer appends to; ``flush()`` hands it over; ``close(status, error)``
    flushes, asks the writer to end the run and waits for it. Raises ``OSError`` from ``start``
    when the writer cannot be started; never afterwards (a dead writer only stops recording).
    """

    def __init__(self, path: str, run_id: str, options: CaptureOptions | None = None,
                 begin: Any = None, tally: Any = None, spool: Any = None) -> None:
        self.path = path
        self.run_id = run_id
        #: A run into a database store: its spool (``capture.spooled.SpoolingWriter``, whose
        #: begin is in it), which the writer process takes over; held (locked) here until the
        #: writer says the run ended, so it is never taken for an orphan meanwhile.
        self.spool = spool
        self.options = options
        #: Held stream (``begin`` given): hand-overs wait here, as the marshal messages the
        #: writer would have read, until ``release()`` calls ``begin()`` (which creates the run
        #: in the file), starts the writer and sends them, or ``drop()`` forgets them.
        self._begin = begin
        self._held: list[bytes] | None = [] if begin is not None else None
        self._held_bytes = 0
        self._ending = False  # closed while held: the end message waits with the rest
        self._tally: Any = None  # a held stream's step count: a ``tally`` (``StepTally``)
        self._tally_class = tally
        self.items: list[Any] = []
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._fd: int | None = None
        self.broken = False
        #: ``(step, reason)`` once the writer process stopped storing steps (a write failed
        #: there); None while it stores them.
        self.cut: tuple[int | None, str] | None = None

    def start(self) -> None:
        if self._held is None:
            self._spawn()
        _FLUSHER.add(self)

    def _spawn(self) -> None:
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {**os.environ, "SNAPSTATE_DISABLE": "1"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH"))
                                            if p)
        debug = os.environ.get("SNAPSTATE_DEBUG") == "1"
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "snapstate_capture.tracing.trace_writer", str(self.path),
             self.run_id, *([str(self.spool.spool_path)] if self.spool is not None else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=None if debug else subprocess.DEVNULL, env=env, start_new_session=True,
            close_fds=True)
        assert self._proc.stdin is not None
        self._fd = self._proc.stdin.fileno()
        _widen_pipe(self._fd)
        if self.options is not None:
            self._send(marshal.dumps(("options", pickle.dumps(self.options))))

    @property
    def held(self) -> bool:
        """True while nothing of the run has reached the file (see ``release``)."""
        return self._held is not None

    def release(self, timeout: float = 60.0) -> bool:
        """Write a held stream: create the run in the file (``begin``), start the writer process
        and hand it everything held; if the stream was closed meanwhile, wait (up to
        ``timeout`` seconds) until the writer stored the run's end, as ``close`` does. True
        when the stream is (now) written through; False when that failed (nothing is kept:
        the stream is ``broken``). Never raises."""
        with self._lock:
            held, begin = self._held, self._begin
            if held is None:
                return not self.broken
            self._held, self._begin, self._held_bytes = None, None, 0
            try:
                begin()
                self._spawn()
            except Exception:  # noqa: BLE001 - the program goes on; the run is not kept
                self.broken = True
                self._proc = self._fd = None
                return False
            for data in held:
                self._send(data)
            ending = self._ending
            fd, self._fd = (self._fd, None) if ending else (None, self._fd)
        if ending:
            self._await_end(fd, True, timeout)
        return not self.broken

    def drop(self) -> None:
        """Forget a held stream's steps: nothing of the run is written (a stream already
        released is left as it is). Stops the flusher."""
        _FLUSHER.remove(self)
        with self._lock:
            if self._held is not None:
                self._held, self._begin, self._held_bytes = None, None, 0
                self.items = []

    def flush(self) -> None:
        """Hand every buffered item to the writer process (thread-safe; never raises)."""
        with self._lock:
            items = self.items
            count = len(items)
            if not count or (self._fd is None and self._held is None):
                return
            batch = items[:count]
            del items[:count]
            batch.append((TIME, Clocks.time(), Clocks.monotonic()))
            try:
                data = marshal.dumps(batch)
            except ValueError:
                data = marshal.dumps([_marshal_safe(i) for i in batch])
            self._send(data)
            overflow = self._held is not None and self._held_bytes > HELD_BYTES
        if overflow:
            self.release()  # too much to hold: written from here on, as an unheld stream

    def _send(self, data: bytes) -> None:
        if self._held is not None:
            self._held.append(data)
            self._held_bytes += len(data)
            return
        if self._fd is None:
            return
        try:
            os.write(self._fd, _HEADER.pack(len(data)))
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError:
            self.broken = True
            self._fd = None

    def request_index(self) -> int | None:
        """Flush, then ask the writer for the index the next step will get (None if unknown).
        A held stream counts its own steps, exactly as the writer will (``step_tally``)."""
        if self._held is not None:
            self.flush()
            with self._lock:
                if self._held is not None:
                    if self._tally is None:
                        self._tally = self._tally_class(self.run_id)
                    return self._tally.index(self._held)
        with self._lock:
            if self._fd is None or self._proc is None or self._proc.stdout is None:
                return None
        self.flush()
        with self._lock:
            self._send(marshal.dumps("index?"))
            try:
                line = self._proc.stdout.readline()
                if line.startswith(b"cut "):  # a write failed there: recording stopped
                    at, _, reason = line.decode("utf-8", "replace")[4:].strip().partition(" ")
                    self.cut = (int(at) if at.isdigit() else None, reason)
                    return None
                return int(line)
            except (OSError, ValueError):
                return None

    def fork(self, path: str, run_id: str, tail: int) -> int:
        """Flush, then have the writer go on into run ``run_id`` of ``path`` — a traced
        replay's fork (``trace_fork.py``) — after copying this run's steps from ``tail`` on
        onto it; returns the index the fork's next step gets. Raises ``OSError`` naming the
        reason when the writer refused or is gone (it then goes on as before)."""
        self.flush()
        with self._lock:
            if self._fd is None or self._proc is None or self._proc.stdout is None:
                raise OSError("the trace writer is gone")
            self._send(marshal.dumps(("fork", str(path), run_id, int(tail))))
            line = self._proc.stdout.readline().decode("utf-8", "replace").strip()
        if line.startswith("forked "):
            self.path, self.run_id = str(path), run_id
            return int(line[7:])
        raise OSError(line.partition(" ")[2] or "the trace writer is gone")

    def close(self, status: str, error: dict[str, Any] | None, timeout: float = 60.0) -> None:
        """Flush, end the run with ``status``/``error`` and wait for the writer to finish.
        A held stream keeps the end with its steps, for ``release`` or ``drop``; closing again
        does nothing."""
        if self._ending:
            return
        _FLUSHER.remove(self)  # returns after a flush of it in the flusher thread
        self.flush()
        with self._lock:
            ending = self._fd is not None or self._held is not None
            if ending:
                self._send(marshal.dumps(("end", status, canonical_json(error).decode()
                                          if error else None)))
            if self._held is not None:
                self._ending = True
                return
            fd, self._fd = self._fd, None
        self._await_end(fd, ending, timeout)

    def _await_end(self, fd: int | None, ending: bool, timeout: float) -> None:
        """Close the pipe (``fd``) and wait until the writer says the run is stored."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        _reap(proc)
        try:
            if fd is not None and proc.stdin is not None:
                proc.stdin.close()
            if ending and proc.stdout is not None:
                # Everything is stored once the writer says so; its own exit is not awaited.
                ready, _, _ = select.select([proc.stdout], [], [], timeout)
                if ready:
                    line = proc.stdout.readline()  # "ended", or "ended cut STEP REASON"
                    if line.startswith(b"ended note "):  # where a spool's steps wait
                        _say(line[11:].decode("utf-8", "replace").rstrip("\n"))
                    if line.startswith(b"ended cut ") and self.cut is None:
                        at, _, reason = line.decode("utf-8", "replace")[10:].strip() \
                            .partition(" ")
                        self.cut = (int(at) if at.isdigit() else None, reason)
            else:
                proc.wait(timeout=timeout)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
            self._let_go_of_spool()

    def _let_go_of_spool(self) -> None:
        spool, self.spool = self.spool, None
        if spool is not None:
            spool.close()  # its lock only: the writer process ended the run in it

    def hand_over(self, timeout: float = 10.0) -> None:
        """The process is ending without a word (``os._exit``): flush, close the pipe and wait
        up to ``timeout`` seconds for the writer to store everything it was handed, so the file
        is complete when the process is gone. The run is left ``running`` (readers report it
        ``crashed``). Never raises."""
        _FLUSHER.remove(self)
        self.flush()
        if self._held is not None:
            self.release()  # what the program did so far is kept, as for any traced run
        with self._lock:
            proc, self._proc = self._proc, None
            self._fd = None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=timeout)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self._let_go_of_spool()

    def abandon(self) -> None:
        """In a forked child: drop the buffer and the pipe without touching the writer (the
        child has no flusher thread: ``Flusher.after_fork_in_child``). The lock is made anew:
        the fork may have come while another thread held it (a flush in progress), and the
        child's end of the block takes it."""
        self._lock = threading.Lock()
        self.items = []
        self._held = self._begin = None
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = None
        self._proc = None


#: The process's one flusher thread (``flusher.py``): every open stream is flushed by it.
_FLUSHER = Flusher(FLUSH_SECONDS)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_FLUSHER.after_fork_in_child)

#: Writer processes that said their run is stored and may still be exiting: held until they
#: have, then reaped (``_reap``). A ``Popen`` let go of while its process runs warns
#: (``ResourceWarning: subprocess N is still running``) into the program's stderr when
#: warnings are shown (pytest, ``-W default``), and its process stays a zombie.
_exiting: list[subprocess.Popen[bytes]] = []


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Hold ``proc`` until its process has exited, and reap the ones held before that have
    (their own exit is not waited for: the recorder goes on at the writer's "ended")."""
    _exiting[:] = [held for held in _exiting if held.poll() is None]
    _exiting.append(proc)


def _reap_at_exit() -> None:
    """At the program's exit: give the writers still exiting a moment, then let them be."""
    for held in _exiting:
        try:
            held.wait(timeout=2)
        except (subprocess.TimeoutExpired, OSError):
            held.returncode = -1  # left running: not waited for again, and no warning at exit
    _exiting.clear()


atexit.register(_reap_at_exit)


def _widen_pipe(fd: int) -> None:
    """Give the pipe to the writer process a 1 MiB buffer where Linux allows it (default 64 KiB):
    a hand-over of a few MB then needs a few wake-ups of the writer's reader, not a hundred."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass  # another OS, or a lower limit: the default buffer works, only slower


def _marshal_safe(item: Any) -> Any:
    """``item`` with anything marshal refuses (a str subclass, …) replaced by its repr."""
    try:
        marshal.dumps(item)
        return item
    except ValueError:
        if isinstance(item, tuple):
            return tuple(_marshal_safe(x) for x in item)
        return f"<unmarshallable {type(item).__name__}>"


def _say(line: str) -> None:
    """A line from the writer process for the user (``snapstate: …``) on stderr."""
    try:
        sys.stderr.write(line + "\n")
    except Exception:  # noqa: BLE001 - stderr may be closed; there is nowhere else to say it
        pass
