"""Checking every blob of a timeline against its content hash, one blob at a time.

A zlib stream is inflated in ``INFLATE_PIECE`` pieces and stops as soon as it passes its claimed
size, so a hostile file's compression bomb costs one piece of memory; other codecs (deltas,
zstandard, manifests) are decoded and checked by the blob layer (``store.blobs``).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable

from ..store import blobs
from ..store.hashing import DIGEST_SIZE
from ..store.reader import Timeline

#: Blob keys read per round trip.
PAGE = 1000
#: Bytes inflated at a time while hashing a zlib stream.
INFLATE_PIECE = 1 << 20


def scan_blobs(timeline: Timeline, progress: Callable[[int], None] | None = None
               ) -> tuple[set[bytes], dict[str, str]]:
    """Check every blob's bytes against its hash, one blob at a time; ``progress(done)`` after
    each page of blobs.

    Returns ``(all keys, {hex key: problem})``.
    """
    known: set[bytes] = set()
    bad: dict[str, str] = {}
    after = b""
    seen = 0
    while True:
        page = timeline.engine.blob_keys_after(after, PAGE)
        if not page:
            return known, bad
        seen += len(page)
        for raw in page:
            if not isinstance(raw, bytes):
                bad[str(raw)[:32]] = "malformed key"
                continue
            known.add(raw)
            problem = check_blob(timeline, raw)
            if problem:
                bad[raw.hex()] = problem
        if progress is not None:
            progress(seen)
        after = page[-1] if isinstance(page[-1], bytes) else after + b"\x00"
        if len(page) < PAGE:
            return known, bad


def check_blob(timeline: Timeline, raw: bytes) -> str | None:
    """Return None when blob ``raw`` (binary key) matches its hash, else the problem."""
    row = timeline.engine.blob_row(raw)
    if row is None:
        return "missing"
    codec, size, data = row
    if len(raw) != DIGEST_SIZE or not isinstance(size, int) or size < 0 \
            or not isinstance(data, bytes):
        return "malformed"
    if codec in (blobs.RAW, blobs.ZLIB):
        ok = _stream_matches(raw, codec, data, size)
    else:  # deltas, zstandard, manifests: the blob layer decodes (and checks) them
        problem = timeline.blob_problem(raw)
        return None if problem is None else problem
    return None if ok else "corrupt (hash mismatch)"


def _stream_matches(raw: bytes, codec: int, data: bytes, size: int) -> bool:
    digest = hashlib.blake2b(digest_size=DIGEST_SIZE)
    if codec == blobs.RAW:
        digest.update(data)
        return len(data) == size and digest.digest() == raw
    inflater = zlib.decompressobj()
    total, pending = 0, data
    try:
        while pending or not inflater.eof:
            piece = inflater.decompress(pending, INFLATE_PIECE)
            pending = inflater.unconsumed_tail
            total += len(piece)
            if total > size:
                return False
            digest.update(piece)
            if not piece and not pending:
                break
    except zlib.error:
        return False
    return total == size and digest.digest() == raw
