"""The bytes of a chunked payload, in one place for the side that writes them
(``capture/chunked.py``, ``capture/valuecache.py``) and the side that reads them chunk by chunk
(``trust/payload_chunks.py``).

A chunked payload is one pickle::

    PROTO 5 · STACK_GLOBAL snapstate_capture.capture.chunked join_list · MARK
        · BINBYTES8 <pickle of a slice> · BINBYTES8 <pickle of the next slice> · …
    · TUPLE · REDUCE · STOP

(``join_dict`` for a dict, whose slices are lists of ``(key, value)`` pairs). The writer stores
it as a manifest of pieces (``store/blobs.py``): ``LIST_HEADER`` or ``DICT_HEADER``, one
``piece`` per chunk (or group manifests of them), ``TRAILER``. These bytes are in every file
ever written: they never change, and ``JOIN_MODULE`` stays the module that holds the join
functions (a test checks it does).
"""

from __future__ import annotations

import struct

#: The module whose ``join_list``/``join_dict`` a chunked payload calls when it is loaded.
JOIN_MODULE = "snapstate_capture.capture.chunked"
#: BINBYTES8: one chunk's pickle as a bytes item of the outer pickle.
_BINBYTES8 = 0x8E


def _short_str(text: str) -> bytes:
    data = text.encode("utf-8")
    return b"\x8c" + bytes([len(data)]) + data  # SHORT_BINUNICODE


def _header(function: str) -> bytes:
    return (b"\x80\x05" + _short_str(JOIN_MODULE) + _short_str(function)
            + b"\x93" + b"(")  # PROTO 5, STACK_GLOBAL, MARK


LIST_HEADER = _header("join_list")
DICT_HEADER = _header("join_dict")
TRAILER = b"tR."  # TUPLE, REDUCE, STOP
#: Header piece -> the kind of container the payload rebuilds.
KINDS = {DICT_HEADER: "dict", LIST_HEADER: "list"}


def piece(chunk_pickle: bytes) -> bytes:
    """Wrap one chunk's pickle as a BINBYTES8 item of the outer pickle."""
    return bytes([_BINBYTES8]) + struct.pack("<Q", len(chunk_pickle)) + chunk_pickle


def unpiece(data: bytes) -> bytes | None:
    """The chunk pickle inside ``data`` when it is exactly one ``piece``, else None."""
    if len(data) < 9 or data[0] != _BINBYTES8:
        return None
    if struct.unpack("<Q", data[1:9])[0] != len(data) - 9:
        return None
    return data[9:]
