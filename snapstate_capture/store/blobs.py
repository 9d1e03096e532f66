"""Blob encoding: content hash, compression and the check on every read.

A blob's key is the hash of its uncompressed bytes, so the same bytes written twice are stored
once and a flipped byte anywhere is caught when read (``IntegrityError``).
"""

from __future__ import annotations

import zlib

from ..integrity import content_hash

RAW, ZLIB = 0, 1
#: Below this size compression does not pay for itself.
COMPRESS_MIN = 64
#: zlib level 1: most of the ratio of level 6 at a fraction of the time on JSON and pickles.
ZLIB_LEVEL = 1


def encode(data: bytes) -> tuple[bytes, int, bytes]:
    """Return ``(hash, codec, stored_bytes)`` for ``data``."""
    key = content_hash(data)
    if len(data) >= COMPRESS_MIN:
        packed = zlib.compress(data, ZLIB_LEVEL)
        if len(packed) < len(data):
            return key, ZLIB, packed
    return key, RAW, data


def decode(key: bytes, codec: int, stored: bytes, size: int) -> bytes | None:
    """Return the original bytes, or None when they do not match ``key`` (corrupt or tampered).

    ``size`` bounds decompression, so a hostile row cannot expand into unbounded memory.
    """
    try:
        if codec == RAW:
            data = bytes(stored)
        elif codec == ZLIB:
            inflater = zlib.decompressobj()
            data = inflater.decompress(stored, size + 1)
        else:
            return None
    except zlib.error:
        return None
    if len(data) != size or content_hash(data) != key:
        return None
    return data
