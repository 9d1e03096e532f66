"""Blob codecs: every codec round-trips, deltas and manifests are checked on read, and a
damaged or hostile row is reported, never decoded into wrong bytes."""

from __future__ import annotations

import os

import pytest

import snapstate_capture as snap
from snapstate_capture.errors import WriteFailed
from snapstate_capture.store.hashing import GENESIS, content_hash
from snapstate_capture.store import blobs


def _source(rows):
    return blobs.BlobSource(lambda key: rows.get(key))


def _store(rows, data, base=None, *, manifest=False, use_zstd=None):
    key, codec, stored = blobs.encode(data, base, manifest=manifest, use_zstd=use_zstd)
    rows[key] = (codec, len(data), stored)
    return key, codec


@pytest.mark.parametrize("use_zstd", [True, False])
def test_a_delta_against_the_previous_version_is_small_and_exact(use_zstd):
    rows = {}
    old = os.urandom(3000).hex().encode()
    new = old[:2000] + b"one changed region" + old[2000:]
    base_key, _ = _store(rows, old, use_zstd=use_zstd)
    key, codec = _store(rows, new, (base_key, old), use_zstd=use_zstd)
    assert codec == (blobs.SDELTA if use_zstd else blobs.ZDELTA)
    assert len(rows[key][2]) < 200  # vs ~3 kB compressed whole
    assert _source(rows).content(key) == new


@pytest.mark.parametrize("size", [3000, 200_000, 400_000])
def test_zstd_deltas_decode_as_a_content_chain_exactly(size, monkeypatch):
    """A zstandard delta is decoded against its base as a content-dictionary chain (the base
    as a raw frame of 128 kB blocks, one reused decompressor): same bytes as the dictionary
    path, and a frame whose header claims another size takes that path instead."""
    old = os.urandom(size // 2).hex().encode()
    new = old[: size // 3] + b"one changed region" + old[size // 3:]
    base_key, _, _ = blobs.encode(old)
    _, codec, stored = blobs.encode(new, (base_key, old), use_zstd=True)
    assert codec == blobs.SDELTA
    assert blobs._chained_delta(stored[16:], len(new), old) == new
    assert blobs._chained_delta(stored[16:], len(new) + 1, old) is None
    assert blobs.decode_inner(codec, stored, len(new), old) == new
    monkeypatch.setattr(blobs, "_chained_delta", lambda *a: None)  # the dictionary path
    assert blobs.decode_inner(codec, stored, len(new), old) == new


def test_manifest_content_is_its_pieces_joined_and_keys_never_collide():
    rows = {}
    pieces = [_store(rows, os.urandom(100))[0] for _ in range(3)]
    inner = blobs.manifest_bytes(pieces)
    key, codec = _store(rows, inner, manifest=True)
    assert codec & blobs.MANIFEST
    assert key != blobs.key_for(inner)  # a plain blob of the same bytes has another key
    assert _source(rows).content(key) == b"".join(rows[p][2] for p in pieces)


def test_corrupt_missing_and_cyclic_rows_raise_blob_errors():
    rows = {}
    data = os.urandom(500).hex().encode()
    key, _ = _store(rows, data)
    codec, size, stored = rows[key]
    rows[key] = (codec, size, stored[:-1] + bytes([stored[-1] ^ 1]))
    with pytest.raises(blobs.BlobError, match="corrupt"):
        _source(rows).content(key)
    with pytest.raises(blobs.BlobError) as missing:
        _source({}).content(key)
    assert missing.value.missing
    a, b = os.urandom(16), os.urandom(16)  # two deltas naming each other as base
    rows = {a: (blobs.SDELTA, 10, b + b"x"), b: (blobs.SDELTA, 10, a + b"x")}
    with pytest.raises(blobs.BlobError, match="chain"):
        _source(rows).content(a)


def test_delta_chains_are_bounded_by_the_writer(tmp_path):
    from snapstate_capture.store.step_record import StepRecord
    from snapstate_capture.store.writer import TimelineWriter

    writer = TimelineWriter(tmp_path / "chain.snap")
    run = writer.begin_run(name="chain", entry={}, env={})
    previous = None
    text = os.urandom(600).hex()
    for i in range(40):
        data = f"{text} version {i}".encode()
        key = blobs.key_for(data).hex()
        record = StepRecord(kind="checkpoint", label=None, wall=0.0, mono=0.0, thread="t",
                            task=None, function=None, filename=None, lineno=None, depth=0,
                            frames=[key], blobs={key: data},
                            bases={key: previous} if previous else {})
        writer.append_step(run, record)
        previous = key
    depths = {k: d for k, (_, d) in writer._recent.items()}
    writer.close()
    assert max(depths.values()) <= blobs.MAX_CHAIN
    assert list(depths.values()).count(0) >= 2  # whole copies come back


def test_rolled_back_blobs_are_forgotten(tmp_path):
    """A step whose transaction fails leaves no trace in the writer: its blobs are written
    again by the next step, never skipped as known or used as a delta base."""
    from snapstate_capture.store.step_record import StepRecord
    from snapstate_capture.store.writer import TimelineWriter

    writer = TimelineWriter(tmp_path / "rb.snap")
    run_id = writer.begin_run(name="rb", entry={}, env={})

    def record(data: bytes) -> StepRecord:
        key = content_hash(data).hex()
        return StepRecord(kind="checkpoint", label=None, wall=0.0, mono=0.0, thread="t",
                          task=None, function=None, filename=None, lineno=None, depth=0,
                          frames=[key], blobs={key: data})

    writer.append_step(run_id, record(b"first step"))
    good = writer._states[run_id]
    writer._states[run_id] = good.with_steps(0, GENESIS)  # step 0 again: the INSERT fails
    data = b"x" * 5000
    with pytest.raises(WriteFailed, match="UNIQUE constraint"):
        writer.append_step(run_id, record(data))
    key = content_hash(data).hex()
    assert not writer.has_blob(key) and key not in writer._recent
    writer._states[run_id] = good
    writer.append_step(run_id, record(data))
    writer.close()
    with snap.open_timeline(tmp_path / "rb.snap") as timeline:
        assert timeline.blob(key) == data


def _w1_like_versions(count: int, size: int) -> list[bytes]:
    """Successive versions of one value as W1 writes them: words, one region changed each time
    (a scratchpad key set, a message appended), ``size`` bytes."""
    import random

    rng = random.Random(size)
    words = "agent tool call result plan step search fetch summary answer user".split()
    text = " ".join(rng.choice(words) for _ in range(size)).encode()[:size]
    out = []
    for i in range(count):
        at = rng.randrange(max(len(text) - 40, 1))
        text = text[:at] + f" version {i} {rng.choice(words)} ".encode() + text[at + 20:]
        out.append(text)
    return out


@pytest.mark.parametrize("size", [300, 1000, 1100, 5000, 8000, 15000, 70000])
def test_a_cheap_delta_reads_back_the_same_bytes_and_is_as_small(size):
    """The deltas the writer makes cheaply (zlib for small blobs, zstandard with a capped hash
    table) read back byte for byte through the reader's decoding, and are within a few bytes
    of the careful path's (zstandard's own level 1 parameters, a fresh compressor each time)."""
    import zstandard  # a dependency: the careful path to compare with

    rows: dict = {}
    versions = _w1_like_versions(6, size)
    base_key, _ = _store(rows, versions[0])
    cheap = careful = 0
    for old, new in zip(versions, versions[1:]):
        key, codec = _store(rows, new, (base_key, old))
        assert _source(rows).content(key) == new
        assert codec == (blobs.ZDELTA if len(new) <= blobs.ZDELTA_SMALL else blobs.SDELTA)
        cheap += len(rows[key][2])
        table = zstandard.ZstdCompressionDict(old, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        careful += blobs.DIGEST_SIZE + len(zstandard.ZstdCompressor(
            level=1, dict_data=table, write_checksum=False, write_dict_id=False).compress(new))
        base_key = key
    assert cheap <= careful * 1.1 + 5 * 8  # measured: the same within 1%, or 1-8 bytes a delta


def test_delta_parameters_cap_the_hash_table_and_cover_the_window():
    """Level 1 for a blob and base under 16 kB together wants 2^15 hash entries (the tables
    then cost ~100 µs to allocate at every delta); the cap keeps 2^14, and the window still
    covers the blob and its base."""
    import zstandard  # a dependency: the careful path to compare with

    level = zstandard.ZstdCompressionParameters.from_level(1, source_size=8000, dict_size=8000)
    assert level.hash_log > blobs.DELTA_HASH_LOG  # what the cap is for
    for size in (100, 8000, 300_000):
        params = blobs._delta_params(size, size)
        assert params.hash_log <= blobs.DELTA_HASH_LOG
        assert 1 << params.window_log >= size
