"""Capturing a big exact list or dict chunk by chunk, at a cost that follows what changed.

The value cache (``valuecache.py``) hands a big container here. Its elements are cut into
chunks (``chunked.py``); what the last capture produced is kept per chunk (``ChunkState``).
Deciding what changed costs C-speed work on the element *identities*, never a re-pickle of
what did not change:

1. The identities of the elements (for a dict: of its keys and of its values) are read as one
   ``bytes`` object (``identity``: the list's item array copied at C speed). The first and last
   differing positions against the previous capture are found by binary search over
   ``bytes.startswith``/``endswith`` (``memcmp``, no copies), so the chunks whose elements may
   differ — after an append, only the last one or two — are found in O(log n) comparisons.
2. Only those chunks are pickled; a pickle equal to the chunk's previous one means the same
   content (new objects, same values), anything else is a new chunk blob.
3. A chunk whose elements are the same objects is unchanged if they are immutable scalars.
   If they are containers (chat messages), one of them may have been edited in place — the one
   thing identities cannot show. A rotating **sweep** re-pickles up to
   ``CaptureOptions.deep_check_chunks`` such chunks per capture (oldest-checked first), so an
   in-place edit deep inside an old chunk is caught within ``ceil(chunks / deep_check_chunks)``
   captures of the value; a container of at most that many chunks is checked whole at every
   step, exactly. ``deep_check_chunks=None`` checks every chunk at every step (exact, O(size)).
   The sweep pickles: for string-heavy elements (chat messages) a pickle is a C-speed copy,
   ~2 µs for 16 messages, cheaper than listing every reachable object's identity through
   ``gc.get_referents`` (~5 µs, measured), and it compares content, so it cannot be fooled by
   a new object at a freed object's address.
4. The payload's manifest is a **tree** once the container has more than ``FANOUT`` chunks:
   the top manifest lists group manifests of ``FANOUT`` chunk keys each, and only the groups
   holding a changed chunk (after an append, the last) are written again, so what a step
   writes does not grow with the number of chunks. Readers join nested manifests as they
   always did (``store/blobs.py``).
"""

from __future__ import annotations

import pickle
import sys
from array import array
from dataclasses import dataclass, field
from typing import Any

from . import chunked

#: Chunk keys per group manifest (16 bytes each: a group manifest is at most ~1 kB).
FANOUT = 64


@dataclass
class Chunk:
    """What the last capture produced for one chunk."""

    refs: list[Any]     # the chunk's elements (dicts: keys then values), kept alive so ids stay
    ids: bytes          # identity snapshot of those elements
    scalars: bool       # every element is an immutable scalar or string
    detector: bytes     # plain pickle of the chunk: equal bytes, equal content
    key: bytes          # 16-byte key of the payload piece (BINBYTES8 + the chunk's payload)


@dataclass
class ChunkState:
    """Per-slot state of a chunked container between captures."""

    length: int = 0
    size: int = 0                                    # elements per chunk
    chunks: list[Chunk] = field(default_factory=list)
    key_ids: bytes = b""                             # identities of the elements (dict: keys)
    value_ids: bytes = b""                           # dicts: identities of the values
    groups: list[bytes] = field(default_factory=list)  # group manifest keys (tree manifests)
    sweep: int = 0                                   # next chunk the sweep looks at
    all_scalars: bool = False


def identity(values: list[Any]) -> bytes:
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


def common_prefix(old: bytes, new: bytes) -> int:
    """Length in bytes of the longest common prefix of ``old`` and ``new`` (a multiple of 8
    is not guaranteed; callers divide by 8). Binary search over ``startswith`` of memoryview
    slices: O(log n) ``memcmp`` calls, no copies."""
    if new.startswith(old):
        return len(old)
    view = memoryview(old)
    low, high = 0, min(len(old), len(new))  # invariant: prefix of length low is common
    while low < high:
        middle = (low + high + 1) // 2
        if new.startswith(view[:middle]):
            low = middle
        else:
            high = middle - 1
    return low


def common_suffix(old: bytes, new: bytes, limit: int) -> int:
    """Length in bytes of the longest common suffix of ``old`` and ``new``, at most ``limit``."""
    view = memoryview(old)
    low, high = 0, min(len(old), len(new), limit)
    if high and new.endswith(view[len(old) - high:]):
        return high
    while low < high:
        middle = (low + high + 1) // 2
        if new.endswith(view[len(old) - middle:]):
            low = middle
        else:
            high = middle - 1
    return low


def changed_span(state: ChunkState | None, key_ids: bytes, value_ids: bytes, length: int,
                 per_chunk: int) -> tuple[int, int]:
    """Chunk indexes ``[low, high)`` outside which every chunk holds the same objects as at the
    last capture (``state``); ``(n, n)`` when nothing moved."""
    count = -(-length // per_chunk)
    if state is None or not state.chunks:
        return 0, count
    prefix = common_prefix(state.key_ids, key_ids) // 8
    if value_ids or state.value_ids:
        prefix = min(prefix, common_prefix(state.value_ids, value_ids) // 8)
    if prefix >= length and state.length == length:
        return count, count
    low = min(prefix, length) // per_chunk
    if state.length != length:
        return low, count  # elements moved: every chunk from the first difference on
    limit = (length - prefix) * 8
    suffix = common_suffix(state.key_ids, key_ids, limit) // 8
    if value_ids or state.value_ids:
        suffix = min(suffix, common_suffix(state.value_ids, value_ids, limit) // 8)
    high = -(-(length - suffix) // per_chunk)
    return low, max(high, low + 1)


def sweep_indexes(state: ChunkState, low: int, high: int, count: int, budget: int | None
                  ) -> list[int]:
    """Chunks of containers below ``count`` and outside ``[low, high)`` to re-check this
    capture: all of them when ``budget`` is None or covers them all, else the next ``budget``
    from the sweep cursor."""
    chunks = state.chunks
    known = min(len(chunks), count)
    if state.all_scalars or not known:
        return []
    if budget is None or known <= budget:
        return [i for i in range(known) if not (low <= i < high) and not chunks[i].scalars]
    out: list[int] = []
    index = state.sweep % known
    for _ in range(min(known, budget * 4)):  # bounded even when most chunks are scalars
        if not (low <= index < high) and not chunks[index].scalars:
            out.append(index)
            if len(out) >= budget:
                index += 1
                break
        index += 1
        if index >= known:
            index = 0
    state.sweep = index % known
    return out


def chunk_items(cls: type, keys: list[Any], values: list[Any], start: int, stop: int
                ) -> list[Any]:
    """The elements of one chunk as they are pickled: a list slice, or (key, value) pairs."""
    if cls is list:
        return keys[start:stop]
    return list(zip(keys[start:stop], values[start:stop]))


def scalar_only(cls: type, keys: list[Any], values: list[Any], start: int, stop: int) -> bool:
    """Whether every element of the chunk (dicts: keys and values) is an immutable scalar."""
    kinds = set(map(type, keys[start:stop]))
    if cls is not list:
        kinds.update(map(type, values[start:stop]))
    return kinds <= chunked.SCALAR_TYPES


def dumps(part: list[Any]) -> bytes:
    """The change detector of one chunk: its plain pickle (raises what pickle raises)."""
    return pickle.dumps(part, chunked.PROTOCOL)

