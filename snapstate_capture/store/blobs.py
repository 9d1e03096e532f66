"""Blob encoding: content hash, compression, deltas, manifests and the check on every read.

A blob's key is the BLAKE2b-128 hash of its *inner bytes*, so the same bytes written twice are
stored once and a flipped byte anywhere is caught when read (``IntegrityError``). The stored row
is ``(hash, codec, size, data)``; ``codec`` says how ``data`` turns back into the inner bytes:

==========  ===================================================================================
 codec       stored ``data``
==========  ===================================================================================
 0 raw       the inner bytes
 1 zlib      zlib stream (level 1)
 2 zstd      zstandard frame (level 1) — written only when ``zstandard`` is installed
 3 zdelta    16-byte base key + zlib stream compressed with the base's inner bytes as ``zdict``
 4 sdelta    16-byte base key + zstandard frame compressed with the base's inner bytes as a
             raw-content dictionary
==========  ===================================================================================

``codec | MANIFEST`` (0x10) marks a *manifest*: its inner bytes are ``MANIFEST_MAGIC`` followed by
16-byte piece keys, and the blob's *content* is the concatenation of those pieces' contents
(pieces may be manifests themselves). A manifest's key is hashed with its own personalisation, so
it can never collide with a plain blob of the same bytes. Everything else's content is its inner
bytes.

Why these choices (measured on the 2-core CI machine, see docs/storage.md): a delta against the
previous version of the same value is what makes "storage grows with what changed" real — the
new tail chunk of an appended list costs ~200 bytes instead of ~3.3 KB; zstandard finds those
long matches at level 1 in ~22 µs, zlib needs level 9 (~150 µs) for the same, so zstandard is used
when installed and zlib (stdlib) otherwise. BLAKE2b stays the content hash (xxhash is 100x faster
but not collision-resistant, and signed chains must mean something); it only ever runs on the
bytes that changed. Delta chains are at most ``MAX_CHAIN`` long, so any blob decodes in a bounded
number of steps.
"""

from __future__ import annotations

import hashlib
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

try:  # optional accelerator: stdlib zlib is the fallback, and files record the codec per blob
    import zstandard as _zstd
except ImportError:  # pragma: no cover - exercised on machines without zstandard
    _zstd = None

from .hashing import DIGEST_SIZE, content_hash

RAW, ZLIB, ZSTD, ZDELTA, SDELTA = 0, 1, 2, 3, 4
MANIFEST = 0x10
CODEC_NAMES = {RAW: "raw", ZLIB: "zlib", ZSTD: "zstd", ZDELTA: "zlib-delta",
               SDELTA: "zstd-delta"}
MANIFEST_MAGIC = b"SSM1"
#: Below this size compression does not pay for itself.
COMPRESS_MIN = 64
#: zlib level 1: most of the ratio of level 6 at a fraction of the time on JSON and pickles.
ZLIB_LEVEL = 1
#: zlib level for deltas: lower levels miss the long matches a delta is made of (measured).
ZDELTA_LEVEL = 9
#: zlib only looks 32 KB back, so a zlib delta against a larger base rarely pays.
ZDELTA_MAX = 64 * 1024
#: What zlib looks back over: a zlib delta uses the last this-many bytes of its base.
ZLIB_WINDOW = 32 * 1024
#: Blobs up to this size (frame records, preview top nodes: half the deltas of a W1 step) are
#: stored as zlib deltas even when zstandard is installed: a zstandard compressor with a new
#: dictionary costs ~12 µs to make before it compresses anything, a zlib one ~1 µs, and at this
#: size zlib at ``ZDELTA_LEVEL`` finds the same matches (8-11 µs vs 19-23 µs per delta, 1-8
#: bytes more, measured on W1's blobs).
ZDELTA_SMALL = 1024
#: Deltas are tried only when the blob and its base are at least this big (below, the ~20 µs a
#: delta costs buys a few bytes).
DELTA_MIN = 192
#: Longest chain of deltas before a blob is stored whole again (bounds read cost): short for
#: small blobs (frame records, previews: read at every step shown), longer for big ones, whose
#: whole copies ("keyframes") would otherwise dominate the file (measured on W1).
MAX_CHAIN = 16
MAX_CHAIN_BIG = 40
BIG_BLOB = 2048


def max_chain(size: int) -> int:
    """Longest delta chain allowed for a blob of ``size`` inner bytes."""
    return MAX_CHAIN_BIG if size >= BIG_BLOB else MAX_CHAIN
#: Guard against hostile files: no legitimate blob nests deeper than this.
MAX_NESTING = 64

HAVE_ZSTD = _zstd is not None


def manifest_hash(inner: bytes) -> bytes:
    """Return the key of a manifest whose inner bytes are ``inner`` (separate hash domain)."""
    return hashlib.blake2b(inner, digest_size=DIGEST_SIZE, person=b"snapmanifest").digest()


def manifest_bytes(piece_keys: list[bytes]) -> bytes:
    """Return the inner bytes of a manifest listing ``piece_keys`` (16-byte keys, in order)."""
    return MANIFEST_MAGIC + b"".join(piece_keys)


def manifest_pieces(inner: bytes) -> list[bytes] | None:
    """Return the piece keys listed by manifest ``inner``, or None when it is malformed."""
    body = inner[len(MANIFEST_MAGIC):]
    if not inner.startswith(MANIFEST_MAGIC) or len(body) % DIGEST_SIZE:
        return None
    return [body[i:i + DIGEST_SIZE] for i in range(0, len(body), DIGEST_SIZE)]


def key_for(inner: bytes, manifest: bool = False) -> bytes:
    """Return the key of a blob with ``inner`` bytes (manifests hash in their own domain)."""
    return manifest_hash(inner) if manifest else content_hash(inner)


def encode(data: bytes, base: tuple[bytes, bytes] | None = None, *, manifest: bool = False,
           use_zstd: bool | None = None, key: bytes | None = None) -> tuple[bytes, int, bytes]:
    """Return ``(key, codec, stored_bytes)`` for inner bytes ``data``.

    ``base`` is ``(base_key, base_inner_bytes)`` of a previous version of the same thing; when
    given, a delta against it is tried and kept if smaller. ``use_zstd`` forces the choice of
    compressor (default: zstandard when installed). ``key``: the key, when the caller hashed
    ``data`` already (the capture side does: hashing again cost ~15 µs per W1 step); every
    read checks it against the bytes either way.
    """
    if key is None:
        key = key_for(data, manifest)
    flag = MANIFEST if manifest else 0
    zstd = HAVE_ZSTD if use_zstd is None else (use_zstd and HAVE_ZSTD)
    if len(data) < COMPRESS_MIN:
        return key, RAW | flag, data
    best_codec, best = RAW, data
    if base is not None and len(base[1]) >= DELTA_MIN and len(data) >= DELTA_MIN:
        delta = _delta(data, base, zstd)
        if delta is not None and len(delta[1]) < len(best):
            best_codec, best = delta
            if len(best) * 4 < len(data):
                return key, best_codec | flag, best  # a good delta: no need to try more
    if zstd:
        packed, codec = _compressor().compress(data), ZSTD
    else:
        packed, codec = zlib.compress(data, ZLIB_LEVEL), ZLIB
    if len(packed) < len(best):
        best_codec, best = codec, packed
    return key, best_codec | flag, best


def _delta(data: bytes, base: tuple[bytes, bytes], zstd: bool) -> tuple[int, bytes] | None:
    """``(codec, stored)`` of ``data`` as a delta against ``base`` (key, inner bytes), or None."""
    base_key, base_data = base
    if len(data) <= ZDELTA_SMALL and len(base_data) <= ZLIB_WINDOW:
        zstd = False  # zlib is ~10 µs cheaper here, for the same few bytes (see ZDELTA_SMALL)
    if zstd:
        table = _zstd.ZstdCompressionDict(base_data, dict_type=_zstd.DICT_TYPE_RAWCONTENT)
        packed = _zstd.ZstdCompressor(compression_params=_delta_params(len(data), len(base_data)),
                                      dict_data=table).compress(data)
        return SDELTA, base_key + packed
    if len(data) > ZDELTA_MAX:
        return None
    packer = zlib.compressobj(ZDELTA_LEVEL, zdict=base_data[-32768:])
    return ZDELTA, base_key + packer.compress(data) + packer.flush()


#: Largest hash table (log2 of its entries) a delta's compressor gets. zstandard's level 1
#: picks 2^15 for a blob and base under 16 kB together: the compressor's tables then pass 128 kB,
#: which glibc hands out as fresh pages on every allocation, and a 7.7 kB delta cost ~130 µs
#: instead of ~25 µs, for the same bytes within 1% (measured; every other size class of level 1
#: already stays at 2^14).
DELTA_HASH_LOG = 14
_DELTA_PARAMS: dict[tuple[int, int], Any] = {}


def _delta_params(size: int, base_size: int) -> Any:
    """zstandard parameters for a ``size``-byte blob compressed against a ``base_size``-byte
    raw-content dictionary: level 1's own for the sizes rounded up to a power of two (so its
    window always covers both), hash table capped at ``DELTA_HASH_LOG``, no checksum or dict
    id (the stored row names its base, and every read checks the blob's hash). Cached per
    size class: making the parameters costs about as much as a small delta."""
    bucket = (size.bit_length(), base_size.bit_length())
    params = _DELTA_PARAMS.get(bucket)
    if params is None:
        level = _zstd.ZstdCompressionParameters.from_level(
            1, source_size=(1 << bucket[0]) - 1, dict_size=(1 << bucket[1]) - 1)
        params = _DELTA_PARAMS[bucket] = _zstd.ZstdCompressionParameters(
            window_log=level.window_log, chain_log=level.chain_log,
            hash_log=min(level.hash_log, DELTA_HASH_LOG), search_log=level.search_log,
            min_match=level.min_match, target_length=level.target_length,
            strategy=level.strategy, write_checksum=0, write_dict_id=0, write_content_size=1)
    return params


_local = threading.local()


def _compressor() -> Any:
    """One zstandard compressor per thread (they are not thread-safe; creating one costs)."""
    packer = getattr(_local, "zstd", None)
    if packer is None:
        packer = _local.zstd = _zstd.ZstdCompressor(level=1, write_checksum=False)
    return packer


def _decompressor() -> Any:
    """One zstandard decompressor per thread: making one costs ~10 µs (its context), about 30
    times what decoding a frame record takes."""
    unpacker = getattr(_local, "unzstd", None)
    if unpacker is None:
        unpacker = _local.unzstd = _zstd.ZstdDecompressor()
    return unpacker


#: Largest block of a zstandard frame (``ZSTD_BLOCKSIZE_MAX``).
_ZSTD_BLOCK = 128 * 1024


def _raw_frame(content: bytes) -> bytes:
    """A zstandard frame holding ``content`` uncompressed (RFC 8878: single segment, 8-byte
    content size, raw blocks): no compression work, just a header per 128 KB."""
    parts = [b"\x28\xb5\x2f\xfd\xe0", len(content).to_bytes(8, "little")]
    if not content:
        parts.append((1).to_bytes(3, "little"))  # one empty last raw block
    for start in range(0, len(content), _ZSTD_BLOCK):
        piece = content[start:start + _ZSTD_BLOCK]
        last = start + _ZSTD_BLOCK >= len(content)
        parts += [((len(piece) << 3) | last).to_bytes(3, "little"), piece]
    return b"".join(parts)


def _chained_delta(frame: bytes, size: int, base: bytes) -> bytes | None:
    """Decode an ``sdelta`` frame against ``base`` with the thread's one decompressor, or None
    to take the general path. A delta is a frame compressed with the base as a raw-content
    dictionary, which is what zstandard's content-dictionary chains are: decoding the base as
    an uncompressed frame and then the delta needs no dictionary object and no new context
    (~3 µs instead of ~15 µs for a frame record). Only frames whose header says exactly
    ``size`` bytes and no dictionary id take this path (so nothing beyond ``size`` is ever
    allocated); anything unusual falls back."""
    try:
        params = _zstd.get_frame_parameters(frame)
        if params.content_size != size or params.dict_id:
            return None
        out = _decompressor().decompress_content_dict_chain([_raw_frame(base), frame])
    except _zstd.ZstdError:
        return None
    return out if len(out) == size else None


def delta_base(codec: int, stored: bytes) -> bytes | None:
    """Return the base key a stored row depends on, or None for self-contained rows."""
    if codec & ~MANIFEST in (ZDELTA, SDELTA) and len(stored) >= DIGEST_SIZE:
        return bytes(stored[:DIGEST_SIZE])
    return None


def decode_inner(codec: int, stored: bytes, size: int, base: bytes | None) -> bytes | None:
    """Return the inner bytes of a stored row, or None when the row cannot be decoded.

    ``base`` is the base's inner bytes for delta codecs. ``size`` bounds decompression, so a
    hostile row cannot expand into unbounded memory. Raises ``LookupError`` for a zstandard
    row when zstandard is not installed.
    """
    kind = codec & ~MANIFEST
    try:
        if kind == RAW:
            return bytes(stored)
        if kind == ZLIB:
            return zlib.decompressobj().decompress(stored, size + 1)
        if kind == ZDELTA:
            if base is None:
                return None
            inflater = zlib.decompressobj(zdict=base[-32768:])
            return inflater.decompress(stored[DIGEST_SIZE:], size + 1)
        if kind in (ZSTD, SDELTA):
            if _zstd is None:
                raise LookupError("zstandard is not installed (pip install zstandard)")
            if kind == ZSTD:
                return _decompressor().decompress(stored, max_output_size=size + 1)
            if base is None:
                return None
            chained = _chained_delta(stored[DIGEST_SIZE:], size, base)
            if chained is not None:
                return chained
            table = _zstd.ZstdCompressionDict(base, dict_type=_zstd.DICT_TYPE_RAWCONTENT)
            return _zstd.ZstdDecompressor(dict_data=table).decompress(
                stored[DIGEST_SIZE:], max_output_size=size + 1)
    except zlib.error:
        return None
    except Exception as exc:  # noqa: BLE001 - zstandard raises its own error type
        if _zstd is not None and isinstance(exc, _zstd.ZstdError):
            return None
        raise
    return None


def decode(key: bytes, codec: int, stored: bytes, size: int) -> bytes | None:
    """Return the inner bytes of a self-contained row (not a delta) if they match ``key``, else
    None. Deltas need their base: read them through ``BlobSource``."""
    if delta_base(codec, stored) is not None:
        return None
    try:
        inner = decode_inner(codec, stored, size, None)
    except LookupError:
        return None
    if inner is None or len(inner) != size or key_for(inner, bool(codec & MANIFEST)) != key:
        return None
    return inner


class BlobError(Exception):
    """A blob is missing (``missing=True``), claims more bytes than the reader allows
    (``too_large=True``) or does not decode to its hash."""

    def __init__(self, key: bytes, problem: str, *, missing: bool = False,
                 too_large: bool = False) -> None:
        super().__init__(problem)
        self.key = key
        self.missing = missing
        self.too_large = too_large


Row = tuple[int, int, bytes]


#: Keys per query of ``BlobSource.read_ahead`` (SQLite's variable limit is 32,766).
READ_AHEAD = 500


class BlobSource:
    """Reads blobs through ``fetch(key) -> (codec, size, data) | None``, with an LRU of inner bytes.

    ``content(key)`` returns the content (manifests reassembled); ``inner(key)`` the inner bytes
    and whether the blob is a manifest. Both verify every hash and raise ``BlobError``.
    """

    def __init__(self, fetch: Callable[[bytes], Row | None], *,
                 cache_bytes: int = 64 * 1024 * 1024,
                 fetch_chain: Callable[[bytes], dict[bytes, Row]] | None = None) -> None:
        self._fetch = fetch
        #: Optional: the rows of a blob and of its delta bases at once (one round trip).
        self._fetch_chain = fetch_chain
        self._cache: OrderedDict[bytes, tuple[bool, bytes]] = OrderedDict()
        self._cached = 0
        self._limit = cache_bytes
        #: Rows read ahead (``read_ahead``), used instead of a query of their own.
        self._pending: dict[bytes, Row] = {}

    def read_ahead(self, keys: Iterable[bytes], fetch_many: Callable[[list[bytes]], list[tuple]],
                   *, limit: int | None = None) -> None:
        """Decode the blobs ``keys`` not yet cached into the cache, their rows read
        ``READ_AHEAD`` keys at a time by ``fetch_many(keys) -> [(hash, codec, size, data)]``
        (one ``IN`` query each, instead of one query a blob): the frame records of thousands of
        steps when two runs are compared. Delta bases among the keys come from the same rows; a
        base outside them costs one chain query, as for a single read. Every row is checked as
        ``content`` checks it (``limit`` too) and ``BlobError`` raised for the first that fails.
        """
        wanted = list(dict.fromkeys(key for key in keys if key not in self._cache))
        for start in range(0, len(wanted), READ_AHEAD):
            part = wanted[start:start + READ_AHEAD]
            self._pending = {bytes(h): (codec, size, data) for h, codec, size, data
                             in fetch_many(part) if isinstance(h, bytes)}
            try:
                for key in part:
                    self.content(key, limit=limit)
            finally:
                self._pending = {}

    def inner(self, key: bytes, _depth: int = 0,
              _rows: dict[bytes, Row] | None = None, *,
              limit: int | None = None) -> tuple[bool, bytes]:
        """Return ``(is_manifest, inner_bytes)`` of blob ``key`` (checked against its hash).

        ``limit``: raise ``BlobError(..., too_large=True)`` when the blob or any delta base it
        is decoded against claims more than ``limit`` bytes, before anything is inflated (a
        hostile file's zlib bomb). The row is read alone first: when its delta base is cached
        (reading a run step by step, the previous version always is), that is the one query;
        otherwise the rest of the chain comes in one more (``fetch_chain``).
        """
        hit = self._cache.get(key)
        if hit is not None:
            if limit is not None and len(hit[1]) > limit:
                raise BlobError(key, "too large for what it holds", too_large=True)
            self._cache.move_to_end(key)
            return hit
        if _depth > MAX_NESTING:
            raise BlobError(key, "delta chain too long or cyclic")
        row = _rows.pop(key, None) if _rows else None
        if row is None and self._pending:
            row = self._pending.pop(key, None)
        if row is None:
            row = self._fetch(key)
        if row is None:
            raise BlobError(key, "missing", missing=True)
        codec, size, data = row
        if not isinstance(codec, int) or not isinstance(size, int) or size < 0 \
                or not isinstance(data, bytes):
            raise BlobError(key, "malformed row")
        if limit is not None and size > limit:
            raise BlobError(key, "too large for what it holds", too_large=True)
        base_key = delta_base(codec, data)
        base = None
        if base_key is not None:
            if (base_key not in self._cache and not _rows and self._fetch_chain is not None
                    and base_key not in self._pending and _depth < MAX_NESTING):
                _rows = self._fetch_chain(base_key)
            base = self.inner(base_key, _depth + 1, _rows, limit=limit)[1]
        try:
            inner = decode_inner(codec, data, size, base)
        except LookupError as exc:
            raise BlobError(key, str(exc)) from None
        is_manifest = bool(codec & MANIFEST)
        if inner is None or len(inner) != size or key_for(inner, is_manifest) != key:
            raise BlobError(key, "corrupt (hash mismatch)")
        self._remember(key, (is_manifest, inner))
        return is_manifest, inner

    def content(self, key: bytes, _depth: int = 0, *, limit: int | None = None) -> bytes:
        """Return the content of blob ``key``: its inner bytes, or its pieces joined.
        ``limit`` bounds every row read on the way, as in ``inner``, and the joined content."""
        if _depth > MAX_NESTING:
            raise BlobError(key, "manifest nesting too deep or cyclic")
        is_manifest, inner = self.inner(key, limit=limit)
        if not is_manifest:
            return inner
        pieces = manifest_pieces(inner)
        if pieces is None:
            raise BlobError(key, "malformed manifest")
        joined = b"".join(self.content(piece, _depth + 1, limit=limit) for piece in pieces)
        if limit is not None and len(joined) > limit:
            raise BlobError(key, "too large for what it holds", too_large=True)
        return joined

    def _remember(self, key: bytes, value: tuple[bool, bytes]) -> None:
        size = len(value[1])
        if size > self._limit // 4:
            return
        self._cache[key] = value
        self._cached += size
        while self._cached > self._limit and self._cache:
            _, (_, old) = self._cache.popitem(last=False)
            self._cached -= len(old)


def references(codec: int, stored: bytes, inner: Callable[[], bytes]) -> list[bytes]:
    """Keys a stored row depends on: its delta base and, for manifests, its pieces.

    ``inner`` is called only for manifests (it decodes the row). Used by gc and export.
    """
    out = []
    base = delta_base(codec, stored)
    if base is not None:
        out.append(base)
    if codec & MANIFEST:
        out.extend(manifest_pieces(inner()) or [])
    return out
