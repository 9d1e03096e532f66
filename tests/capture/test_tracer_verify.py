"""Traced runs are chained and signed like any other: `verify` checks each trace chunk, finds a
chunk altered after the fact, and a signed traced run is trusted (its payloads load)."""

from __future__ import annotations

import sqlite3

import snapstate_capture as snap
from snapstate_capture.trust import keys
from snapstate_capture.trust.verify import verify_timeline

HERE = __file__


def work(n):
    items = []
    for i in range(n):
        items.append({"i": i})
    return items


def _report(path):
    with snap.open_timeline(path) as timeline:
        (run,) = verify_timeline(timeline, keys.find_key()).runs
        return run


def test_signed_traced_run_verifies_and_is_trusted(snap_path):
    keys.generate_key()
    with snap.record(snap_path, trace="lines", include=[HERE]):
        snap.checkpoint("between", note="x")
        work(3)
    run = _report(snap_path)
    assert (run.signature, run.status) == ("valid", "finished")
    assert run.intact and run.trusted and run.steps > 10
    with snap.open_timeline(snap_path) as timeline:
        last = [s for s in timeline.runs[-1].steps if s.kind == "return"][-1]
        assert last.function == "work"
        assert last.extra["return"].load() == [{"i": 0}, {"i": 1}, {"i": 2}]


def test_altered_chunk_is_reported(snap_path):
    with snap.record(snap_path, trace="lines", include=[HERE]):
        work(3)
    assert _report(snap_path).intact
    conn = sqlite3.connect(snap_path)
    first, data = conn.execute("SELECT first, data FROM trace_chunks").fetchone()
    forged = bytes(data[:-1]) + bytes([data[-1] ^ 1])
    conn.execute("UPDATE trace_chunks SET data=? WHERE first=?", (forged, first))
    conn.commit()
    conn.close()
    run = _report(snap_path)
    assert not run.intact
    assert run.chain_broken_at == first and "altered" in run.chain_problem
