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
identity. A caller is shown as it is at each of its callee's calls, exactly, as for any
other value (``tests/capture/test_tracer_catch_up.py``), so only plain data is taken — what
``marshal`` copies (builtin types only, C speed, and equal bytes mean equal content) — and
each chunk's copy is compared with the last one (``_copies``): a chunk of the same bytes
holding the same objects is unchanged; one whose bytes differ is pickled again and compared
with its last pickle. A list of strings and numbers skips the copies: a chunk of them holding
the same objects is unchanged.

The pieces go to the writer process as ``BLOB`` items of five elements
``(BLOB, key, data, manifest, base)``: ``manifest`` true for a manifest (stored as one),
``base`` the key of the previous version of the same blob (a delta base hint) or None.
"""

from __future__ import annotations

import dataclasses
import marshal
from typing import Any

from ..capture.frames import StackCapture
from ..capture.valuecache import ValueCache
from ..options import CaptureOptions

#: A value whose chunks' marshal copies add up to more than this is left to the whole-value
#: path, which stores it bounded (``value_encoder.MARSHAL_BYTES``): its copies are kept between
#: events, and its first capture stores it whole.
MAX_BYTES = 16 << 20


class ChunkedLocals:
    """The chunked captures of a tracer's frames (see the module docstring).

    ``ref(fid, name, value, per_chunk)`` → a reference tuple ``(preview key, payload key,
    "pickle")``, its new blobs handed to ``send_blob`` first, or None when the value is not
    taken (a secret name, not plain data, over ``MAX_BYTES``, or a chunk that cannot be
    pickled plainly: the caller captures it whole). ``forget(fid, names)`` lets a finished
    frame's states go, refused values included. Never raises.
    """

    def __init__(self, options: CaptureOptions, send_blob: Any) -> None:
        self._cache = ValueCache(dataclasses.replace(options, deep_check_chunks=None))
        self._values = options.values
        self._send_blob = send_blob  # ``ValueEncoder.send_blob``
        #: slot -> the object whose chunked capture failed there (not tried again while the
        #: slot holds it: each try pickles chunks before it fails)
        self._refused: dict[tuple[int, str], Any] = {}
        #: slot -> ``(the chunks' marshal copies at the last capture, its reference)``, for
        #: values holding containers (``_copies``)
        self._copies: dict[tuple[int, str], tuple[list[bytes], tuple]] = {}

    def ref(self, fid: int, name: str, value: Any, per_chunk: int) -> tuple | None:
        slot = (fid, name)
        if self._refused.get(slot) is value or self._values.is_secret(name):
            return None
        cache = self._cache
        if cache.full():
            cache.clear()
            self._refused.clear()
            self._copies.clear()
        cls = type(value)
        state = cache.chunk_state(slot, cls)
        copies = None
        recheck = None
        if state is None or not state.all_scalars:
            try:
                copies = _copies(value, cls, per_chunk)
            except (ValueError, TypeError, RecursionError):  # not plain data: captured whole
                self._refused[slot] = value
                return None
            if sum(map(len, copies)) > MAX_BYTES:
                cache.forget(slot)
                self._copies.pop(slot, None)
                return None
            last = self._copies.get(slot)
            if last is not None and state is not None:
                if last[0] == copies:
                    return last[1]
                recheck = [index for index, (old, new) in enumerate(zip(last[0], copies))
                           if old != new]
        out = StackCapture()
        try:
            ref = cache.chunked(slot, value, cls, per_chunk, name, out, recheck)
        except Exception:  # noqa: BLE001 - captured whole instead
            ref = None
        if ref is None:
            cache.forget(slot)
            self._copies.pop(slot, None)
            self._refused[slot] = value
            return None
        send, manifests, bases = self._send_blob, out.manifests, out.bases
        for key, blob in out.blobs.items():
            send(key, blob, key in manifests, bases.get(key))
        result = (ref["p"], ref["b"], ref["s"])
        if copies is not None:
            self._copies[slot] = (copies, result)
        else:
            self._copies.pop(slot, None)
        return result

    def forget(self, fid: int, names: set[str]) -> None:
        """Drop the chunk states of frame ``fid``'s ``names`` (the frame finished)."""
        for name in names:
            self._cache.forget((fid, name))
            self._refused.pop((fid, name), None)
            self._copies.pop((fid, name), None)


def _copies(value: Any, cls: type, per_chunk: int) -> list[bytes]:
    """The ``marshal`` copy of each chunk of ``value`` (a list: its slices; a dict: its keys'
    and values' slices). Raises what ``marshal`` raises on anything but builtin data.

    Equal bytes mean equal content: marshal writes builtin types only, each by its exact type
    and content. Only sharing shows besides: an object held by more than one reference is
    written once and referred back to, so a chunk's bytes may also change when the program
    takes or drops a reference to something inside it — that chunk is then pickled again
    and compared, which settles it."""
    dumps = marshal.dumps
    if cls is list:
        return [dumps(value[start:start + per_chunk])
                for start in range(0, len(value), per_chunk)]
    snapshot = dict.copy(value)  # one C call: keys and values of the same moment
    keys, values = list(snapshot), list(dict.values(snapshot))
    return [dumps((keys[start:start + per_chunk], values[start:start + per_chunk]))
            for start in range(0, len(keys), per_chunk)]
