"""A 100 MB numpy array that never changes is stored once: later steps add ~0 bytes
(issue 3; payload blobs are content-addressed). The cost per step is in bench/values_capture.py."""

from __future__ import annotations

import os

import numpy as np

import snapstate_capture as snap

ARRAY_BYTES = 100 * 1024 * 1024


def record_steps(path, steps):
    weights = np.arange(ARRAY_BYTES // 8, dtype=np.float64)
    with snap.record(path):
        for step in range(steps):
            snap.checkpoint(f"step {step}")
    return weights.nbytes


def test_unchanged_100mb_array_is_stored_once(tmp_path):
    one, ten = tmp_path / "one.snap", tmp_path / "ten.snap"
    assert record_steps(one, 1) == ARRAY_BYTES
    record_steps(ten, 10)

    with snap.open_timeline(ten) as timeline:
        steps = timeline.runs[-1].steps[:]
        refs = [s.frames[-1].locals["weights"] for s in steps]
        assert len({r.payload_key for r in refs}) == 1
        assert refs[0].preview["shape"] == [ARRAY_BYTES // 8]
        assert refs[0].preview["nbytes"] == ARRAY_BYTES
        sizes = dict(timeline.engine.query("SELECT lower(hex(hash)), size FROM blobs"))
        assert sizes[refs[0].payload_key] > ARRAY_BYTES  # the array's payload, once
        others = sum(size for key, size in sizes.items() if key != refs[0].payload_key)
    assert others < 256 * 1024, f"the 10 steps stored {others} bytes besides the array"
    grown = os.path.getsize(ten) - os.path.getsize(one)
    assert grown < 512 * 1024, f"9 more steps grew the file by {grown} bytes"
