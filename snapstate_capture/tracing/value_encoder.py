"""Values at traced steps: scalars travel as themselves, anything else as a reference to blobs.

The tracer stores the locals of traced frames through one ``ValueEncoder`` per run, on the
program's own thread, so what it costs there is what the program pays. A scalar (a number,
bool, None, a str up to ``INLINE_STR`` characters without a credential's shape) stays in the
step as itself — the tracer's hot paths test that themselves, with ``SCALAR_TYPES``,
``INLINE_STR`` and ``ADDRESS_FLOOR`` — but an int that is the id of a local on the stack does
not (``addressed``: its number differs in every process, its name does not). Anything else
becomes a reference to blobs (the forms are in ``stream.py``'s docstring), and capturing it
must not cost a full capture at every event, so the encoder keeps what it made:

- plain data is copied with ``marshal`` (C speed, a few µs), hashed and sent once as a
  ``VALUE`` item; the writer process makes its preview and payload from the copy
  (``resolve_marshaled``), in parallel with the program. A copy over ``MARSHAL_BYTES``
  (256 KiB) is bounded instead (``bounded.py``), and a frame's exact list or dict from
  ``CHUNKED_MIN_LENGTH`` (64) elements up is captured by chunks (``chunked_locals.py``);
- other values are keyed by the digest of their plain pickle (or of their change detector,
  ``capture.detectors``) in a content cache of up to ``CACHE_LIMIT`` references, which the
  run's explicit steps share (``capture/lent_captures.py``);
- within one trace event the program does not run, so an object met twice is captured once
  (the per-event memo: ``begin_event``/``end_event``);
- big objects (``big_values.py``), framework machinery and live objects refused by their type
  are captured as a preview alone, cached by what that preview is made of.
"""

from __future__ import annotations

import marshal
import pickle
import threading
from typing import Any

from ..program_signals import signal_of
from ..capture.chunked import chunk_size
from ..store.hashing import canonical_json, content_hash
from ..capture.detectors import STATE_ELSEWHERE, function_detector  # checkpoint path's
from ..capture.lent_captures import clean as clean_capture
from ..options import CaptureOptions
from ..store.trace_items import BLOB, VALUE
from ..values import capture_value, secret_shapes
from ..values.payload import caught_warnings
from ..values.addresses import ADDRESS_MIN, holds_stack_address, local_address
from ..values.taken_locks import TAKEN_LOCK_NOTE, holds_taken_lock
from ..values.identity import live_code
from ..values.preview import MACHINERY, PreviewBuilder
from ..values.reducers import REDUCERS, REFUSED_BY_TYPE
from .big_values import BigValues
from .bounded import bounded_preview, key_holds_local_class, shallow_key


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
        if cls not in STATE_ELSEWHERE and holds_taken_lock(value):
            return self.bounded(value, name, TAKEN_LOCK_NOTE)
        pickled = True
        if cls in STATE_ELSEWHERE or cls is int:  # its pickle does not change with it, or
            # an int named by the local it is the id of (``addressed``), here now: no cache
            digest, pickled = None, False
        else:
            try:
                with caught_warnings():  # a class's __reduce__ warning: not the program's
                    digest = content_hash(pickle.dumps(value, 5)).hex()
            except Exception as exc:  # noqa: BLE001 - capture_value reports why
                if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                    raise
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
        except Exception as exc:  # noqa: BLE001 - no detector: captured whole
            if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                raise
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

    def bounded(self, value: Any, name: str | None, note: str | None = None) -> tuple:
        """The reference of a big object's bounded form (``bounded.py``): a one-level preview
        marked ``"bounded"`` (``note``: why, when not for its size), no payload."""
        key = shallow_key(value, self._big.options.max_items, self._bounded_repr)
        if key is not None and note is not None:
            key = (*key, note)
        ref = self._shallow.get(key) if key is not None else None
        if ref is None:
            text = key[1] if key is not None and type(key[1]) is str else None
            ref = (self._blob(canonical_json(bounded_preview(value, self._big.options, text,
                                                             note or self._big.note))),
                   None, None)
            if key is not None and not key_holds_local_class(key):
                if len(self._shallow) >= self.CACHE_LIMIT:
                    self._shallow.clear()
                    self.bounded_keys.clear()
                self._shallow[key] = ref
            if note is None:  # (one bounded for a taken lock is captured in full once free)
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
