"""Capturing a value again only when it changed: per-slot caches and chunked containers.

A *slot* is where a value is seen from one step to the next: ``(code object, stack position,
variable name, capturing thread)`` for locals, ``("extra", 0, name, capturing thread)`` for step
values (per thread: a thread writes each step before it captures its next, so what its own
last capture made is stored). For each slot the cache keeps what the last capture produced and
a cheap change detector:

- most values: their pickle (C speed, ~1 µs for small ones). Equal pickle bytes mean equal
  content, so the previous preview and payload are reused and nothing is written; otherwise the
  value is captured again (``values.capture_value``) and its new blobs are written as deltas
  against the previous ones (``store/blobs.py``).
- big exact ``list``/``dict`` values: split into chunks of elements (``chunked.py``). A chunk of
  scalars is unchanged when its elements are the same objects (identity, no pickling); any other
  chunk is re-pickled and compared. Only changed chunks are hashed, compressed and written.
  The preview is rebuilt only when one of its shown children may have changed; when only the
  length changed, the previous preview is reused with ``len``/``more`` updated.

Objects with a custom ``__reduce__``/``__getstate__`` are captured again at every step: their
pickle may leave out state that their preview shows — unless their pickle is known to hold it
all (``_PICKLE_SHOWS_ALL``; pydantic models, ``detectors.pickle_shows_all``).

A value captured whole is also remembered for its step and the next (``SharedCaptures``): an
object handed down the stack is one value in several frames (the agent's ``sources`` dict is a
local of ``run_agent``, of ``research`` and an argument of an effect), and another slot meeting
the same object with equal pickle bytes takes that capture's ref instead of previewing,
digesting and serializing it again. Its change detector, likewise, is pickled once per step
(``StackCapture.detectors``), not once per frame that holds it.
"""

from __future__ import annotations

import collections
import enum
import random
import types
from dataclasses import dataclass
from typing import Any

from . import chunk_capture, chunked
from .chunk_capture import FANOUT, Chunk, ChunkState
from .detectors import (_BUILTIN, IMMUTABLE, detector as detector_of, fixed_zone, frozen_member,
                        function_detector, pickle_shows_all, plain_pickling as _plain_pickling,
                        same_items, strict_detector)
from .lent_captures import NAMED_PARTS, transparent
from .live_values import LiveValues
from .shared_captures import SharedCaptures
from ..program_signals import signal_of
from ..store.hashing import canonical_json, content_hash
from ..options import CaptureOptions
from ..store.blobs import manifest_bytes, manifest_hash
from ..values import capture_value, chunk_layout, secret_shapes
from ..values.addresses import ADDRESS_MIN, local_address
from ..values.payload import is_plain_payload, serialize
from ..values.preview import MACHINERY, PreviewBuilder
from .preview_json import encode_preview

#: Children JSON larger than this is stored as its own blob (``"kids"``), so a preview whose
#: length alone changed costs a small top node.
KIDS_MIN = 512
#: Detector bytes above this are not kept (the value is captured again at every step).
DETECTOR_MAX = 16 * 1024 * 1024
#: Slots remembered before the cache starts again (bounds memory with generated code).
MAX_SLOTS = 10_000


def add_blob(out: Any, data: bytes, base: str | None = None) -> str:
    """Hash ``data``, queue it in ``out.blobs`` (with its delta ``base``) and return its hex key."""
    key = content_hash(data).hex()
    out.blobs[key] = data
    if base is not None and base != key:
        out.bases[key] = base
    return key


_CONSTANT_KEYS: dict[bytes, tuple[str, bytes]] = {}


def _constant_piece(out: Any, data: bytes) -> bytes:
    """Queue one of the constant pieces of a chunked payload (header, trailer) and return its
    16-byte key, hashed once per process."""
    known = _CONSTANT_KEYS.get(data)
    if known is None:
        raw = content_hash(data)
        known = _CONSTANT_KEYS[data] = (raw.hex(), raw)
    out.blobs[known[0]] = data
    return known[1]


def add_manifest(out: Any, pieces: list[bytes], base: str | None = None) -> str:
    """Queue a manifest of ``pieces`` (16-byte keys) and return its hex key."""
    data = manifest_bytes(pieces)
    key = manifest_hash(data).hex()
    out.blobs[key] = data
    out.manifests.add(key)
    if base is not None and base != key:
        out.bases[key] = base
    return key


@dataclass
class _Entry:
    kind: type
    ref: dict[str, Any]
    detector: bytes | None = None
    preview: dict[str, Any] | None = None
    top_key: str | None = None       # preview top-node key (base for the next delta)
    kids_key: str | None = None      # preview children key, when stored by reference
    kids_data: bytes | None = None   # ... and its bytes (queued again with every new top node)
    chunked: ChunkState | None = None  # big exact list/dict: its chunks (``chunk_capture.py``)
    obj: Any = None                  # modules and functions: the object itself
    memo: dict[int, list] | None = None  # exact dict/list: its preview's children memo
    ident: list[Any] | None = None   # exact dict: its identity digest's memo
    error: str | None = None         # the step's capture error its capture gave (a placeholder)
    frozen: tuple | None = None      # an enum member: its attributes when captured

    def again(self, out: Any) -> dict[str, Any]:
        """This capture's ref for another step ``out``, with its capture error (a value with a
        placeholder reports it at every step it is held, as a fresh capture would)."""
        if self.error is not None:
            out.errors.append(self.error)
        return self.ref


class ValueCache:
    """Per-recorder cache of captured values by slot (see the module docstring).

    ``ref(slot, value, name, out)`` returns the value ref (``{"p", "b", "s"}``) and queues the
    blobs that are new in ``out`` (an object with ``blobs``, ``manifests``, ``bases`` and
    ``errors``). ``clear()`` forgets everything (after a failed write, whose blobs never reached
    the file).
    """

    def __init__(self, options: CaptureOptions) -> None:
        self.options = options
        self._slots: dict[Any, _Entry] = {}
        self._shared = SharedCaptures()
        self._builder = PreviewBuilder(options.values)
        self._live = LiveValues(self._builder)
        #: Strings up to this length are stored inline (never beyond what a preview shows).
        self._inline_str = min(INLINE_STR, options.values.max_string)
        #: In a traced run, the captures this cache and the tracer lend each other
        #: (``lent_captures.py``); None otherwise.
        self.lent: Any = None

    def end_record(self, out: Any) -> None:
        """The step record ``out`` is complete: what it shares with the next step is kept by
        weak reference only (``SharedCaptures.end_record``), and its detectors are let go."""
        self._shared.end_record(out)
        out.detectors.clear()

    def clear(self) -> None:
        """Forget every slot (and every capture shared between slots)."""
        self._slots.clear()
        self._shared.clear()
        self._live.clear()
        if self.lent is not None:
            self.lent.clear()

    def forget(self, slot: Any) -> None:
        """Forget what ``slot`` last captured."""
        self._slots.pop(slot, None)

    def full(self) -> bool:
        """True when more than ``MAX_SLOTS`` slots are kept (``clear`` then)."""
        return len(self._slots) > MAX_SLOTS

    def chunk_state(self, slot: Any, cls: type) -> ChunkState | None:
        """The chunks ``slot`` last captured a ``cls`` as (``chunked``), or None."""
        entry = self._slots.get(slot)
        return entry.chunked if entry is not None and entry.kind is cls else None

    def ref(self, slot: Any, value: Any, name: str | None, out: Any, *,
            inline: bool = True) -> dict[str, Any]:
        """Return the value ref of ``value`` seen at ``slot`` under ``name`` (see class doc).
        ``inline``: a scalar may be returned as ``{"v": value}`` (frame locals; step values,
        which the effect journal refers to, always get blobs)."""
        if len(self._slots) > MAX_SLOTS or len(self._live) > MAX_SLOTS:
            self._slots.clear()  # many distinct code objects (exec'd code): start again
            self._live.clear()
        cls = type(value)
        if name is not None and self.options.values.is_secret(name):
            return self._capture(slot, value, name, out, None)
        if cls is str and secret_shapes.find(value):  # a credential: cut out by capture_value
            return self._capture(slot, value, name, out, None)
        if cls is int and value >= ADDRESS_MIN and local_address(value) is not None:
            # the id of a local (``key = id(node)``): named by it, not its number (identity)
            return self._capture(slot, value, name, out, None)
        if inline and cls in _INLINE and self.options.payloads and (
                cls is not str or len(value) <= self._inline_str) and (
                cls is not int or -_INT_LIMIT <= value < _INT_LIMIT):
            return {"v": value}  # a scalar lives in the frame record itself: no blobs
        if (cls is list or cls is dict) and value and self.options.payloads:
            per_chunk = chunked.chunk_size(value)
            if len(value) > per_chunk:
                result = self.chunked(slot, value, cls, per_chunk, name, out)
                if result is not None:
                    return result
        if cls not in _BUILTIN and MACHINERY.lookup(cls) is not None:
            return self._machinery(slot, value, out)
        if cls not in _BUILTIN and self._live.is_live(cls):  # a lock, an open file, ...
            return self._live.ref(slot, value, name, out, self._capture)
        frozen = frozen_member(value) if isinstance(value, enum.Enum) else None
        by_identity = (cls in IMMUTABLE or isinstance(value, _BY_IDENTITY)
                       or frozen is not None or fixed_zone(value, cls))
        if cls not in _BUILTIN and not by_identity and cls not in _PICKLE_SHOWS_ALL \
                and not _plain_pickling(cls) and not pickle_shows_all(cls):
            return self._capture(slot, value, name, out, None)
        entry = self._slots.get(slot)
        if by_identity:
            if entry is not None and entry.obj is value and same_items(entry.frozen, frozen):
                return entry.again(out)
            ref = self._capture(slot, value, name, out, None)
            self._slots[slot].obj = value
            self._slots[slot].frozen = frozen
            return ref
        if cls not in _BUILTIN and cls not in _PICKLE_SHOWS_ALL and pickle_shows_all(cls):
            try:  # a library value: no part of it may hide state from its pickle
                detector = strict_detector(value)
            except Exception as exc:  # noqa: BLE001 - such a part, or unpicklable: captured whole
                if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                    raise
                return self._capture(slot, value, name, out, None)
            if entry is not None and entry.kind is cls and entry.detector == detector:
                return entry.again(out)
            return self._capture(slot, value, name, out,
                                 detector if len(detector) <= DETECTOR_MAX else None)
        try:
            detector = detector_of(value, out)
        except Exception as exc:  # noqa: BLE001 - a lambda inside, a module: see function_detector
            if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                raise
            detector = function_detector(value, self._builder)
            if detector is None:  # unpicklable: capture_value makes the placeholder
                return self._capture(slot, value, name, out, None)
            if entry is not None and entry.kind is cls and entry.detector == detector:
                return entry.again(out)
            return self._capture(slot, value, name, out, detector, payload=False)
        if entry is not None and entry.kind is cls and entry.detector == detector:
            return entry.again(out)
        if (cls in _SCALARS and self.options.payloads
                and len(detector) <= self.options.values.max_payload_bytes):
            return self._scalar(slot, value, detector, entry, out)
        return self._capture(slot, value, name, out,
                             detector if len(detector) <= DETECTOR_MAX else None)

    def _scalar(self, slot: Any, value: Any, detector: bytes, previous: _Entry | None,
                out: Any) -> dict[str, Any]:
        """A changed scalar (a step counter) without the general capture: its preview is the
        builder's node for it, its payload the detector pickle — the bytes ``capture_value``
        would write (its fast path pickles the same way; a test compares them), no test-load
        (a scalar's pickle always loads). Secret names never get here (``ref``)."""
        preview = self._builder.node(value, 0, set())
        top_base = previous.top_key if previous is not None else None
        ref: dict[str, Any] = {"p": add_blob(out, canonical_json(preview), top_base)}
        base = previous.ref.get("b") if previous is not None else None
        ref["b"] = add_blob(out, detector, base)
        ref["s"] = "pickle"
        self._slots[slot] = _Entry(type(value), ref, detector, None, ref["p"])
        return ref

    def _machinery(self, slot: Any, value: Any, out: Any) -> dict[str, Any]:
        """Framework machinery (``values/machinery.py``): its short typed preview alone,
        built from static attributes each step (~µs) and stored again only when it differs —
        never pickled to detect a change (a compiled graph's pickle attempt cost ~10 ms)."""
        entry = self._slots.get(slot)
        preview = self._builder.build(value)
        if entry is not None and entry.kind is type(value) and entry.preview == preview:
            return entry.ref
        top_key = self._store_preview(preview, entry, out, split=False)[0]
        ref: dict[str, Any] = {"p": top_key}
        self._slots[slot] = _Entry(type(value), ref, preview=preview, top_key=top_key)
        return ref

    # -- whole values ---------------------------------------------------------------------
    def _capture(self, slot: Any, value: Any, name: str | None, out: Any,
                 detector: bytes | None, payload: bool = True) -> dict[str, Any]:
        """Capture ``value`` whole and remember ``detector`` for the next step; ``payload``:
        the detector is the value's plain pickle (which may then be its payload)."""
        previous = self._slots.get(slot)
        if detector is not None and payload:
            shared = self._shared.get(value, detector, out)
            if shared is None and self.lent is not None:  # the tracer's capture of it
                shared = self.lent.lend(value, detector, self.options.values.test_load)
            if shared is not None:  # the same object, unchanged, captured at another slot
                self._slots[slot] = _Entry(type(value), shared, detector, None, shared["p"])
                return shared
        memo = ident = None
        if type(value) is dict or type(value) is list:
            same_kind = previous is not None and previous.kind is type(value)
            memo = previous.memo if same_kind and previous.memo is not None else {}
            if type(value) is dict:
                ident = previous.ident if same_kind and previous.ident is not None else []
        plain = (detector if detector is not None and payload and self.options.payloads
                 and is_plain_payload(value, detector, self.options.values) else None)
        captured = capture_value(value, name=name, options=self.options.values,
                                 payloads=self.options.payloads, reuse=memo,
                                 plain_payload=plain, identity_memo=ident)
        top_key, kids_key, kids_data = self._store_preview(captured.preview, previous, out,
                                                           split=False, memo=memo)
        ref: dict[str, Any] = {"p": top_key}
        if captured.payload is not None:
            base = previous.ref.get("b") if previous is not None else None
            ref["b"] = add_blob(out, captured.payload, base)
            ref["s"] = captured.serializer
        error = f"{name}: {captured.error}" if captured.error else None
        if error is not None:  # no payload, placeholder parts, or not loadable: on the step
            out.errors.append(error)
        elif (detector is not None and payload
              and not any(part in captured.preview for part in NAMED_PARTS)):
            self._shared.put(value, detector, ref, out)
            if (self.lent is not None and "b" in ref and top_key in out.blobs
                    and transparent(value, out.blobs[top_key])):
                out.offers.append((detector, ref))  # for the tracer, once the step is written
        self._slots[slot] = _Entry(type(value), ref, detector, None, top_key, kids_key, kids_data,
                                   memo=memo, ident=ident, error=error)
        return ref

    def _store_preview(self, preview: dict[str, Any], previous: _Entry | None, out: Any, *,
                       split: bool = True, memo: dict[int, list] | None = None
                       ) -> tuple[str, str | None, bytes | None]:
        """Store ``preview``; with ``split``, large children go into their own blob (chunked
        containers, whose preview is often reused with a new length). ``memo``: the children
        memo the preview was built with (``values/preview_json.py``). Returns (top key, kids
        key, kids bytes)."""
        top_base = previous.top_key if previous is not None else None
        children = preview.get("children")
        if children and split:
            kids = canonical_json(children)
            if len(kids) >= KIDS_MIN:
                kids_base = previous.kids_key if previous is not None else None
                kids_key = add_blob(out, kids, kids_base)
                top = {k: v for k, v in preview.items() if k != "children"}
                top["kids"] = kids_key
                return add_blob(out, canonical_json(top), top_base), kids_key, kids
        return add_blob(out, encode_preview(preview, memo), top_base), None, None

    # -- chunked containers ---------------------------------------------------------------
    def chunked(self, slot: Any, value: Any, cls: type, per_chunk: int, name: str | None,
                 out: Any, recheck: list[int] | None = None) -> dict[str, Any] | None:
        """Capture a big exact list/dict chunk by chunk (``chunk_capture.py``: what is looked at
        follows what changed); None when a chunk cannot be pickled (whole-value capture).
        ``recheck``: the old chunks that may have been edited in place, when the caller knows
        them (traced frames compare each chunk's ``marshal`` copy: ``chunked_locals``) —
        instead of the sweep."""
        entry = self._slots.get(slot)
        state = entry.chunked if entry is not None and entry.kind is cls else None
        if state is not None and state.size != per_chunk:
            state = None
        if cls is list:
            keys = value[:]  # a private copy: identities read race-free, elements kept alive
            values: list[Any] = keys
            key_ids, value_ids = chunk_capture.identity(keys), b""
        else:
            snapshot = dict.copy(value)  # one C call: keys and values of the same moment
            keys, values = list(snapshot), list(dict.values(snapshot))
            key_ids, value_ids = chunk_capture.identity(keys), chunk_capture.identity(values)
        length = len(keys)
        low, high = chunk_capture.changed_span(state, key_ids, value_ids, length, per_chunk)
        count = -(-length // per_chunk)
        old = state.chunks if state is not None else []
        known = len(old)
        if low >= count and state is not None and state.all_scalars and state.length == length:
            return entry.ref  # type: ignore[union-attr] - same objects, all immutable
        # Every position outside [low, high) holds the same objects as before: its old chunk
        # stands unless the sweep re-checks it (an in-place edit of an element).
        chunks: list[Any] = old[:count] + [None] * (count - min(known, count))
        check = list(range(low, high))
        if state is not None and recheck is not None:
            check += [index for index in recheck if index < count and not low <= index < high]
        elif state is not None:
            check += chunk_capture.sweep_indexes(state, low, high, count,
                                                 self.options.deep_check_chunks)
        changed: list[int] = []
        for index in check:
            start = index * per_chunk
            stop = min(start + per_chunk, length)
            part_ids = key_ids[start * 8:stop * 8] + value_ids[start * 8:stop * 8]
            prev = old[index] if index < known else None
            refs = keys[start:stop] + (values[start:stop] if cls is not list else [])
            if prev is not None and prev.ids == part_ids and prev.scalars:
                chunks[index] = prev  # the same immutable objects
                continue
            part = chunk_capture.chunk_items(cls, keys, values, start, stop)
            try:
                detector = chunk_capture.dumps(part)
            except Exception as exc:  # noqa: BLE001 - fall back to whole-value capture (dill, placeholders)
                if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                    raise
                return None
            if prev is not None and prev.detector == detector:
                chunks[index] = prev if prev.ids == part_ids else \
                    Chunk(refs, part_ids, prev.scalars, detector, prev.key)
                continue
            data = (chunk_layout.piece(detector)
                    if is_plain_payload(part, detector, self.options.values)
                    else self._chunk_payload(part, name))
            if data is None:
                return None
            scalars = chunk_capture.scalar_only(cls, keys, values, start, stop)
            key = add_blob(out, data, prev.key.hex() if prev is not None else None)
            chunks[index] = Chunk(refs, part_ids, scalars, detector, bytes.fromhex(key))
            changed.append(index)
        if state is not None and not changed and state.length == length:
            state.chunks, state.key_ids, state.value_ids = chunks, key_ids, value_ids
            return entry.ref  # type: ignore[union-attr]
        groups = self._payload_groups(chunks, changed, state, out)
        header = chunk_layout.LIST_HEADER if cls is list else chunk_layout.DICT_HEADER
        pieces = [_constant_piece(out, header), *groups,
                  _constant_piece(out, chunk_layout.TRAILER)]
        payload_key = add_manifest(out, pieces, entry.ref.get("b") if state is not None
                                   else None)  # type: ignore[union-attr]
        top_key, kids_key, kids_data, preview = self._chunked_preview(
            value, name, length, changed, entry if state is not None else None, per_chunk, out)
        ref = {"p": top_key, "b": payload_key, "s": "pickle"}
        new_state = ChunkState(length, per_chunk, chunks, key_ids, value_ids,
                               groups if len(chunks) > FANOUT else [],
                               state.sweep if state is not None else 0,
                               # unchanged chunks keep the old verdict (False stays False)
                               (state is None or state.all_scalars)
                               and all(chunks[i].scalars for i in check))
        self._slots[slot] = _Entry(cls, ref, None, preview, top_key, kids_key, kids_data,
                                   new_state)
        return ref

    @staticmethod
    def _payload_groups(chunks: list[Chunk], changed: list[int], state: ChunkState | None,
                        out: Any) -> list[bytes]:
        """The keys the top manifest lists: the chunk keys themselves, or — beyond ``FANOUT``
        chunks — group manifests of ``FANOUT`` chunk keys, only those holding a changed chunk
        (or whose chunk count changed) written again."""
        if len(chunks) <= FANOUT:
            return [c.key for c in chunks]
        old = state.groups if state is not None else []
        touched = {index // FANOUT for index in changed}
        if state is not None and len(state.chunks) != len(chunks):
            touched.add((len(chunks) - 1) // FANOUT)
        groups = []
        for number, start in enumerate(range(0, len(chunks), FANOUT)):
            if number < len(old) and number not in touched:
                groups.append(old[number])
                continue
            base = old[number].hex() if number < len(old) else None
            key = add_manifest(out, [c.key for c in chunks[start:start + FANOUT]], base)
            groups.append(bytes.fromhex(key))
        return groups

    def _chunk_payload(self, part: list[Any], name: str | None) -> bytes | None:
        """The payload piece of one chunk, written by ``values.payload.serialize`` (so secret
        names are redacted as for any value); None unless it is a plain, clean pickle."""
        result = serialize(part, self.options.values, path=name or "")
        if (result.data is None or result.serializer != "pickle" or result.placeholders
                or result.redacted or result.loadable is False):
            return None
        return chunk_layout.piece(result.data)

    def _chunked_preview(self, value: Any, name: str | None, length: int, changed: list[int],
                         entry: _Entry | None, per_chunk: int, out: Any
                         ) -> tuple[str, str | None, bytes | None, dict[str, Any]]:
        """Reuse the previous preview with a new length when no shown child can have changed."""
        shown = self.options.values.max_items
        previous = entry.preview if entry is not None else None
        before = entry.chunked.length if entry is not None and entry.chunked else 0
        if (entry is not None and previous is not None and before > shown
                and length > shown and isinstance(previous.get("children"), list)
                and not any(i * per_chunk < shown for i in changed)):
            preview = dict(previous, len=length, more=length - len(previous["children"]))
            if entry.kids_key is not None and entry.kids_data is not None:
                out.blobs[entry.kids_key] = entry.kids_data  # known to the writer: not rewritten
                top = {k: v for k, v in preview.items() if k != "children"}
                top["kids"] = entry.kids_key
                key = add_blob(out, canonical_json(top), entry.top_key)
                return key, entry.kids_key, entry.kids_data, preview
            return add_blob(out, canonical_json(preview), entry.top_key), None, None, preview
        # No identity digest for chunked containers: it would be stale in the reused preview
        # above and costs a walk of every element at each step; their chunk pickles compare.
        captured = capture_value(value, name=name, options=self.options.values, payloads=False,
                                 identify=False)
        top_key, kids_key, kids_data = self._store_preview(captured.preview, entry, out)
        return top_key, kids_key, kids_data, captured.preview


#: Captured once per object: a module or function is the same thing while it is the same object.
_BY_IDENTITY = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
#: Stored inline in the frame record (``{"v": value}``, as traced steps store them: schema 4):
#: the reader builds their preview, the trust gate hands the value back without unpickling.
_INLINE = frozenset({int, float, bool, type(None), str})
#: Strings longer than this get blobs like any value.
INLINE_STR = 200
#: Ints beyond 64 bits get blobs (their decimal text can be long, and JSON readers differ).
_INT_LIMIT = 2 ** 63
#: Captured by ``ValueCache._scalar`` when they change.
_SCALARS = frozenset({int, float, bool, type(None), str})
#: Classes with their own ``__reduce__`` whose pickle still holds everything their preview
#: shows (a ``random.Random``: its whole generator state), so equal pickles mean an equal
#: capture and the pickle can be the change detector (library models by base class:
#: ``detectors.pickle_shows_all``).
_PICKLE_SHOWS_ALL = frozenset({random.Random, collections.defaultdict, collections.OrderedDict,
                               collections.Counter, collections.deque})
