"""Trace chunks are stored with zstandard (the writer keeps up with line tracing); chunks written
with zlib (older files) still read, and a hostile zstd header is refused before anything is
allocated."""

from __future__ import annotations

import marshal
import sqlite3
import zlib

import pytest
import zstandard

import snapstate_capture as snap
from snapstate_capture.store import chunks
from tests.conftest import record_traced_loop


def _line_values(path):
    with snap.open_timeline(path) as timeline:
        return [(s.frames[-1].lineno, s.frames[-1].locals["total"].preview["repr"])
                for s in timeline.runs[-1].steps
                if s.frames and "total" in s.frames[-1].locals]


def test_chunks_are_zstd_and_older_zlib_chunks_still_read(tmp_path):
    path = tmp_path / "t.snap"
    record_traced_loop(path, 50)
    before = _line_values(path)
    assert before and before[-1][1] == str(sum(range(50)))
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT first, data FROM trace_chunks").fetchall()
        assert rows and all(bytes(data).startswith(b"\x28\xb5\x2f\xfd") for _, data in rows)
        for first, data in rows:  # rewrite every chunk as a file from before zstd chunks
            conn.execute("UPDATE trace_chunks SET data=? WHERE first=?",
                         (zlib.compress(chunks.inflate(data), 1), first))
    assert _line_values(path) == before


def test_zstd_header_claiming_a_huge_size_is_refused_before_allocating():
    raw = marshal.dumps(({"frames": []}, []))
    frame = zstandard.ZstdCompressor(level=1).compress(raw)
    # the same frame with its header rewritten to claim 2**40 bytes (8-byte size field,
    # single segment), the blocks left as they are
    blocks = frame[zstandard.frame_header_size(frame):]
    huge = b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + (2 ** 40).to_bytes(8, "little") + blocks
    assert zstandard.frame_content_size(huge) == 2 ** 40
    with pytest.raises(ValueError, match="larger than any chunk"):
        chunks.decode(huge)
    unknown = zstandard.ZstdCompressor(level=1, write_content_size=False).compress(raw)
    with pytest.raises(ValueError, match="content size"):
        chunks.decode(unknown)
    with pytest.raises(ValueError, match="malformed"):
        chunks.decode(frame[:-3])  # cut short
    assert chunks.decode(frame) == ({"frames": []}, [])


def test_closing_compacts_blob_files_but_not_files_of_trace_chunks(tmp_path):
    """VACUUM rewrites the whole file at close: worth ~15% on blob pages, ~1% on trace chunks
    (each fills a page of its own, appended in order), so a traced file is not compacted."""
    from snapstate_capture.store.writer import TimelineWriter

    traced = tmp_path / "traced.snap"

    record_traced_loop(traced, 90_000)  # ~180,000 line steps: ~45 chunks
    blobs = tmp_path / "blobs.snap"
    with snap.record(blobs):
        for i in range(30):
            notes = {f"k{j}": f"text {i} {j}" * 20 for j in range(40)}
            snap.checkpoint("step", notes=notes)
    for path, expected in ((traced, False), (blobs, True)):
        writer = TimelineWriter(path)
        try:
            assert writer._worth_compacting() is expected, path.name
        finally:
            writer.close()
