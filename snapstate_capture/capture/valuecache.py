"""Capturing a value again only when it changed: per-slot caches and chunked containers.

A *slot* is where a value is seen from one step to the next: ``(code object, stack position,
variable name)`` for locals, ``("extra", name)`` for step values. For each slot the cache keeps
what the last capture produced and a cheap change detector:

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
pickle may leave out state that their preview shows.
"""

from __future__ import annotations

import pickle
import random
import sys
import types
from array import array
from itertools import chain
from dataclasses import dataclass, field
from typing import Any

from . import chunked
from ..store.hashing import canonical_json, content_hash
from ..options import CaptureOptions
from ..store.blobs import manifest_bytes, manifest_hash
from ..values import capture_value
from ..values.payload import is_plain_payload, serialize
from ..values.preview import PreviewBuilder
from .preview_json import encode_preview

#: Children JSON larger than this is stored as its own blob (``"kids"``), so a preview whose
#: length alone changed costs a small top node.
KIDS_MIN = 512
#: Detector bytes above this are not kept (the value is captured again at every step).
DETECTOR_MAX = 16 * 1024 * 1024
#: Slots remembered before the cache starts again (bounds memory with generated code).
MAX_SLOTS = 10_000
_PLAIN_REDUCE = object.__reduce_ex__


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
class _Chunk:
    refs: list[Any]     # the chunk's elements, kept alive so their ids stay theirs
    ids: bytes          # identity snapshot of the chunk's elements (dicts: keys and values)
    scalars: bool       # every element is an immutable scalar or string
    detector: bytes     # plain pickle of the chunk: equal bytes, equal content
    key: bytes          # 16-byte key of the payload piece (BINBYTES8 + the chunk's payload)


@dataclass
class _Entry:
    kind: type
    ref: dict[str, Any]
    detector: bytes | None = None
    preview: dict[str, Any] | None = None
    top_key: str | None = None       # preview top-node key (base for the next delta)
    kids_key: str | None = None      # preview children key, when stored by reference
    kids_data: bytes | None = None   # ... and its bytes (queued again with every new top node)
    length: int = 0
    size: int = 0                    # elements per chunk
    chunks: list[_Chunk] = field(default_factory=list)
    ids: bytes = b""                 # identity snapshot of the whole container
    obj: Any = None                  # modules and functions: the object itself
    memo: dict[int, list] | None = None  # exact dict/list: its preview's children memo


def _identity(values: list[Any]) -> bytes:
    """The ids of the elements of ``values`` as bytes (8 per element).

    ``values`` must be a list private to the caller (a fresh copy): on CPython its item array is
    read directly (``_pointer_reader``), ~50x faster than mapping ``id``, and race-free because
    no other thread can resize a list it cannot see.
    """
    reader = _pointer_reader()
    if reader is not None:
        return reader(values)
    return array("Q", map(id, values)).tobytes()


_READER: list[Any] = []


def _pointer_reader() -> Any:
    """A function reading a list's item pointers on CPython (checked once against ``id``), or
    None where the layout is not the expected one (other interpreters, debug builds)."""
    if _READER:
        return _READER[0]
    reader = None
    if sys.implementation.name == "cpython" and not hasattr(sys, "gettotalrefcount"):
        import ctypes

        offset = ctypes.sizeof(ctypes.c_ssize_t) * 3  # PyVarObject header: refcnt, type, size

        def read(items: list[Any]) -> bytes:
            if not items:
                return b""
            address = ctypes.c_void_p.from_address(id(items) + offset).value
            return ctypes.string_at(address, len(items) * 8)

        probe = [object(), "x", 3.5, None, [1]]
        try:
            if ctypes.sizeof(ctypes.c_void_p) == 8 and \
                    read(probe) == array("Q", map(id, probe)).tobytes():
                reader = read
        except Exception:  # noqa: BLE001 - any surprise: use the portable way
            reader = None
    _READER.append(reader)
    return reader


def _plain_pickling(cls: type) -> bool:
    return (getattr(cls, "__reduce_ex__", None) is _PLAIN_REDUCE
            and getattr(cls, "__reduce__", None) is object.__reduce__
            and getattr(cls, "__getstate__", object.__getstate__) is object.__getstate__)


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
        self._builder = PreviewBuilder(options.values)

    def clear(self) -> None:
        """Forget every slot."""
        self._slots.clear()

    def ref(self, slot: Any, value: Any, name: str | None, out: Any) -> dict[str, Any]:
        """Return the value ref of ``value`` seen at ``slot`` under ``name`` (see class doc)."""
        if len(self._slots) > MAX_SLOTS:
            self._slots.clear()  # many distinct code objects (exec'd code): start again
        cls = type(value)
        if name is not None and self.options.values.is_secret(name):
            return self._capture(slot, value, name, out, None)
        if (cls is list or cls is dict) and value and self.options.payloads:
            first = value[0] if cls is list else next(iter(dict.values(value)))
            per_chunk = chunked.chunk_size(first)
            if len(value) > per_chunk:
                result = self._chunked(slot, value, cls, per_chunk, name, out)
                if result is not None:
                    return result
        if cls not in _BUILTIN and cls not in _PICKLE_SHOWS_ALL and not _plain_pickling(cls):
            return self._capture(slot, value, name, out, None)
        entry = self._slots.get(slot)
        if isinstance(value, _BY_IDENTITY):
            if entry is not None and entry.obj is value:
                return entry.ref
            ref = self._capture(slot, value, name, out, None)
            self._slots[slot].obj = value
            return ref
        try:
            detector = pickle.dumps(value, chunked.PROTOCOL)
        except Exception:  # noqa: BLE001 - unpicklable: capture_value makes the placeholder
            return self._capture(slot, value, name, out, None)
        if entry is not None and entry.kind is cls and entry.detector == detector:
            return entry.ref
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

    # -- whole values ---------------------------------------------------------------------
    def _capture(self, slot: Any, value: Any, name: str | None, out: Any,
                 detector: bytes | None) -> dict[str, Any]:
        previous = self._slots.get(slot)
        memo = None
        if type(value) is dict or type(value) is list:
            memo = (previous.memo if previous is not None and previous.memo is not None
                    and previous.kind is type(value) else {})
        plain = (detector if detector is not None and self.options.payloads
                 and is_plain_payload(value, detector, self.options.values) else None)
        captured = capture_value(value, name=name, options=self.options.values,
                                 payloads=self.options.payloads, reuse=memo,
                                 plain_payload=plain)
        top_key, kids_key, kids_data = self._store_preview(captured.preview, previous, out,
                                                           split=False, memo=memo)
        ref: dict[str, Any] = {"p": top_key}
        if captured.payload is not None:
            base = previous.ref.get("b") if previous is not None else None
            ref["b"] = add_blob(out, captured.payload, base)
            ref["s"] = captured.serializer
        if captured.error:  # no payload, placeholder parts, or not loadable: counted on the step
            out.errors.append(f"{name}: {captured.error}")
        self._slots[slot] = _Entry(type(value), ref, detector, None, top_key, kids_key, kids_data,
                                   memo=memo)
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
    def _chunked(self, slot: Any, value: Any, cls: type, per_chunk: int, name: str | None,
                 out: Any) -> dict[str, Any] | None:
        """Capture a big exact list/dict chunk by chunk; None when a chunk cannot be pickled."""
        entry = self._slots.get(slot)
        if entry is not None and (entry.kind is not cls or entry.size != per_chunk):
            entry = None
        if cls is list:
            items = value[:]  # a private copy: identities read race-free, elements kept alive
            ids, width = _identity(items), per_chunk * 8
        else:
            items = list(dict.items(value))
            ids, width = _identity(list(chain.from_iterable(items))), per_chunk * 16
        length = len(items)
        if (entry is not None and entry.length == length and entry.ids == ids
                and all(c.scalars for c in entry.chunks)):
            return entry.ref  # same objects, all immutable: nothing to look at
        old = entry.chunks if entry is not None else []
        chunks: list[_Chunk] = []
        changed: list[int] = []
        dumps, protocol, known = pickle.dumps, chunked.PROTOCOL, len(old)
        for index, start in enumerate(range(0, length, per_chunk)):
            part_ids = ids[index * width:(index + 1) * width]
            prev = old[index] if index < known else None
            same_objects = prev is not None and prev.ids == part_ids
            if same_objects and prev.scalars:
                chunks.append(prev)
                continue
            part = items[start:start + per_chunk]
            try:
                detector = dumps(part, protocol)  # chunked.dumps_chunk, inlined: the hot loop
            except Exception:  # noqa: BLE001 - fall back to whole-value capture (dill, placeholders)
                return None
            if prev is not None and prev.detector == detector:
                chunks.append(prev if same_objects else
                              _Chunk(part, part_ids, prev.scalars, detector, prev.key))
                continue
            data = (chunked.piece(detector)
                    if is_plain_payload(part, detector, self.options.values)
                    else self._chunk_payload(part, name))
            if data is None:
                return None
            flat = part if cls is list else chain.from_iterable(part)
            scalars = set(map(type, flat)) <= chunked.SCALAR_TYPES
            key = add_blob(out, data, prev.key.hex() if prev is not None else None)
            chunks.append(_Chunk(part, part_ids, scalars, detector, bytes.fromhex(key)))
            changed.append(index)
        if entry is not None and not changed and entry.length == length:
            entry.chunks, entry.ids = chunks, ids
            return entry.ref
        header = chunked.LIST_HEADER if cls is list else chunked.DICT_HEADER
        pieces = [_constant_piece(out, header), *(c.key for c in chunks),
                  _constant_piece(out, chunked.TRAILER)]
        payload_key = add_manifest(out, pieces, entry.ref.get("b") if entry is not None else None)
        top_key, kids_key, kids_data, preview = self._chunked_preview(
            value, name, length, changed, entry, per_chunk, out)
        ref = {"p": top_key, "b": payload_key, "s": "pickle"}
        self._slots[slot] = _Entry(cls, ref, None, preview, top_key, kids_key, kids_data, length,
                                   per_chunk, chunks, ids)
        return ref

    def _chunk_payload(self, part: list[Any], name: str | None) -> bytes | None:
        """The payload piece of one chunk, written by ``values.payload.serialize`` (so secret
        names are redacted as for any value); None unless it is a plain, clean pickle."""
        result = serialize(part, self.options.values, path=name or "")
        if (result.data is None or result.serializer != "pickle" or result.placeholders
                or result.redacted or result.loadable is False):
            return None
        return chunked.piece(result.data)

    def _chunked_preview(self, value: Any, name: str | None, length: int, changed: list[int],
                         entry: _Entry | None, per_chunk: int, out: Any
                         ) -> tuple[str, str | None, bytes | None, dict[str, Any]]:
        """Reuse the previous preview with a new length when no shown child can have changed."""
        shown = self.options.values.max_items
        previous = entry.preview if entry is not None else None
        if (entry is not None and previous is not None and entry.length > shown
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
        captured = capture_value(value, name=name, options=self.options.values, payloads=False)
        top_key, kids_key, kids_data = self._store_preview(captured.preview, entry, out)
        return top_key, kids_key, kids_data, captured.preview


#: Captured once per object: a module or function is the same thing while it is the same object.
_BY_IDENTITY = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
_BUILTIN = frozenset({list, dict, tuple, set, frozenset, str, bytes, int, float, bool, complex,
                      type(None)})
#: Captured by ``ValueCache._scalar`` when they change.
_SCALARS = frozenset({int, float, bool, type(None), str})
#: Classes with their own ``__reduce__`` whose pickle still holds everything their preview
#: shows (a ``random.Random``: its whole generator state), so equal pickles mean an equal
#: capture and the pickle can be the change detector.
_PICKLE_SHOWS_ALL = frozenset({random.Random})
