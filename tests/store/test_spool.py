"""The spool file (``store.spool``): frames come back in order, a torn last frame (a recorder
killed mid-write) is left for later and never taken for a change, a damaged frame ends what is
read, and a file that is not a spool is refused."""

from __future__ import annotations

import os

import pytest

from snapstate_capture.store.spool import SpoolFile, SpoolReader, encode_frame


def test_frames_in_order_and_a_torn_frame_waits(tmp_path):
    path = tmp_path / "run.spool"
    spool = SpoolFile(path, "postgresql://db", "r1")
    spool.append(("begin", {"name": "x"}))
    reader = SpoolReader(path)
    assert reader.header == ("postgresql://db", "r1")
    assert reader.read() == [("begin", {"name": "x"})]
    frame = encode_frame(("step", {"label": "big", "blobs": {"k": b"\0" * 100_000}}, None))
    spool.append_bytes(frame[:5000])  # the recorder is killed in the middle of this write
    assert reader.read() == [] and reader.pending_bytes == 5000
    spool.append_bytes(frame[5000:])  # (or it was only slow)
    (change,) = reader.read()
    assert change[1]["blobs"]["k"] == b"\0" * 100_000
    spool.close()
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_a_damaged_frame_ends_the_spool(tmp_path):
    path = tmp_path / "run.spool"
    spool = SpoolFile(path, "postgresql://db", "r1")
    spool.append(("end", "finished", None))
    frame = bytearray(encode_frame(("step", {"label": "a"}, None)))
    frame[-1] ^= 0xFF
    spool.append_bytes(bytes(frame))
    spool.append(("step", {"label": "after"}, None))
    reader = SpoolReader(path)
    assert reader.read() == [("end", "finished", None)]
    assert reader.damaged and reader.read() == []


def test_not_a_spool(tmp_path):
    path = tmp_path / "other.spool"
    path.write_bytes(b"SQLite format 3\0" + b"\0" * 100)
    with pytest.raises(ValueError, match="not a SnapState spool"):
        SpoolReader(path)
