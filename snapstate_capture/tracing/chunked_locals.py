"""Big lists and dicts held by traced frames, captured at the cost of what changed.

A call-traced frame is caught up at every call it makes (``CallFrame.refresh``), and its
locals are looked at again at its return. A list the frame appends to while it calls a
function per element (``out.append(f(x))``) was copied with ``marshal`` and hashed whole at
each of those events, and sent whole to the writer process, which built its preview and
payload again: quadratic in the list's length — a 10,000-element loop cost ~300 µs a call at
its end (issue 19: "one that changed costs about its changed part").

``ChunkedLocals`` hands such a value to the checkpoint path's chunked capture
(``capture/chunk_capture.py`` through ``ValueCache``), with the frame and the name as its slot:
what differs is found from the elements' identities at C speed, only the chunks holding
changes are pickled, the payload is a manifest of chunk pieces (a tree past ``FANOUT`` chunks)
and the preview is reused with a new length when no shown element changed. An element edited
in place inside an old chunk (a message dict changed after it was appended) has the same
identity, so every chunk holding containers is pickled again at each capture and compared
with its last pickle (``deep_check_chunks=None``): a caller is shown as it is at each of its
callee's calls, exactly, as for any other value (``tests/capture/test_tracer_catch_up.py``).
A chunk of strings and numbers that holds the same objects is unchanged without a pickle.

The pieces go to the writer process as ``BLOB`` items of five elements
``(BLOB, key, data, manifest, base)``: ``manifest`` true for a manifest (stored as one),
``base`` the key of the previous version of the same blob (a delta base hint) or None.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..capture import chunked
from ..capture.frames import StackCapture
from ..capture.valuecache import MAX_SLOTS, ValueCache
from ..options import CaptureOptions
from ..store.trace_items import BLOB

#: A list or dict is captured by chunks from this many chunks up (``chunked.chunk_size``
#: elements each: 256 strings or numbers, 16 containers). Below it, the whole-value path
#: (a ``marshal`` copy, C speed) costs less than building a chunked capture's preview.
MIN_CHUNKS = 4


class ChunkedLocals:
    """The chunked captures of a tracer's frames (see the module docstring).

    ``ref(fid, name, value)`` → a reference tuple ``(preview key, payload key, "pickle")`` with
    its new blobs emitted, or None when the value is not taken (too short, a secret name, or a
    chunk that cannot be pickled plainly: the caller captures it whole). ``forget(fid,
    names)`` lets a finished frame's states go. Never raises.
    """

    def __init__(self, options: CaptureOptions, emit: Any, sent: set[str]) -> None:
        self._cache = ValueCache(dataclasses.replace(options, deep_check_chunks=None))
        self._values = options.values
        self._emit = emit
        self._sent = sent
        #: slot -> the object whose chunked capture failed there (not tried again while the
        #: slot holds it: each try pickles chunks before it fails)
        self._refused: dict[tuple[int, str], Any] = {}

    @staticmethod
    def wanted(value: Any) -> bool:
        """True when ``value`` (an exact, non-empty list or dict) is long enough to be
        captured by chunks."""
        cls = type(value)
        first = value[0] if cls is list else next(iter(dict.values(value)))
        return len(value) >= MIN_CHUNKS * chunked.chunk_size(first)

    def ref(self, fid: int, name: str, value: Any) -> tuple | None:
        slot = (fid, name)
        if self._refused.get(slot) is value or self._values.is_secret(name):
            return None
        cache = self._cache
        if len(cache._slots) > MAX_SLOTS:
            cache.clear()
            self._refused.clear()
        cls = type(value)
        first = value[0] if cls is list else next(iter(dict.values(value)))
        out = StackCapture()
        try:
            ref = cache._chunked(slot, value, cls, chunked.chunk_size(first), name, out)
        except Exception:  # noqa: BLE001 - captured whole instead
            ref = None
        if ref is None:
            cache._slots.pop(slot, None)
            self._refused[slot] = value
            return None
        sent, emit, manifests, bases = self._sent, self._emit, out.manifests, out.bases
        for key, data in out.blobs.items():
            if key in sent:
                continue
            sent.add(key)
            base = bases.get(key)
            if base is not None or key in manifests:
                emit((BLOB, key, data, key in manifests, base))
            else:
                emit((BLOB, key, data))
        return (ref["p"], ref["b"], ref["s"])

    def forget(self, fid: int, names: set[str]) -> None:
        """Drop the chunk states of frame ``fid``'s ``names`` (the frame finished)."""
        slots = self._cache._slots
        for name in names:
            slots.pop((fid, name), None)
            self._refused.pop((fid, name), None)
