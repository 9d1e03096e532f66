"""``snapstate push`` / ``pull`` between a timeline file and a real PostgreSQL store: the round
trip keeps every step, value and signature; pushing twice is a no-op; an altered run is
refused."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import snapstate_capture as snap
from snapstate_capture.trust.keys import find_key
from snapstate_capture.trust.verify import verify_timeline


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snapstate_inspect", *argv],
                          capture_output=True, text=True, timeout=120)


def _record(path, tmp_path) -> str:
    with snap.record(path, name="agent"):
        memory = {"facts": []}
        for i in range(5):
            memory["facts"].append(f"fact {i}" * 20)
            snap.checkpoint("learned", n=i)
    program = tmp_path / "loop.py"
    program.write_text("x = []\nfor i in range(30):\n    x.append(i * i)\n")
    done = _cli("record", "-o", str(path), "--trace", "lines", str(program))
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        return timeline.runs[0].id


def _content(location, run_id):
    """Everything a reader shows of a run, as plain data."""
    with snap.open_timeline(location) as timeline:
        run = timeline.run(run_id)
        return (run.name, run.status, run.signature, run.key_id, run.chain_head,
                [(s.index, s.kind, s.label, s.function, s.lineno,
                  [(f.function, f.lineno, {k: v.preview for k, v in f.locals.items()})
                   for f in s.frames],
                  {k: v.preview for k, v in s.extra.items()}) for s in run.steps])


def test_round_trip_through_the_store_is_identical_and_verifies(pg_server, tmp_path):
    url = pg_server.create_database("pushpull")
    source = tmp_path / "mine.snap"
    first = _record(source, tmp_path)
    with snap.open_timeline(source) as timeline:
        traced = timeline.runs[1].id
    for run_id in (first, traced):
        pushed = _cli("push", str(source), url, "--run", run_id)
        assert pushed.returncode == 0 and "pushed run" in pushed.stdout, pushed.stderr
    again = _cli("push", str(source), url, "--run", first)
    assert again.returncode == 0 and "already in" in again.stdout
    with snap.open_timeline(url) as store:
        assert sorted(r.id for r in store.runs) == sorted([first, traced])
    pulled = tmp_path / "pulled.snap"
    for run_id in (first, traced):
        done = _cli("pull", url, "--run", run_id[:10], "-o", str(pulled))
        assert done.returncode == 0, done.stderr
        assert _content(pulled, run_id) == _content(source, run_id) == _content(url, run_id)
    with snap.open_timeline(pulled) as timeline:
        report = verify_timeline(timeline, find_key())
        assert timeline.run(first).steps[-1].frames[-1].locals["memory"].load() == \
            {"facts": [f"fact {i}" * 20 for i in range(5)]}
    assert [(r.signature, r.chain_broken_at) for r in report.runs] == [("valid", None)] * 2


def test_an_altered_run_is_not_pushed(pg_server, tmp_path):
    url = pg_server.create_database("altered")
    source = tmp_path / "mine.snap"
    run_id = _record(source, tmp_path)
    assert _cli("store", "init", url).returncode == 0
    with sqlite3.connect(source) as conn:
        conn.execute("UPDATE steps SET label='forged' WHERE run_id=? AND idx=2", (run_id,))
    done = _cli("push", str(source), url, "--run", run_id)
    assert done.returncode == 2
    assert "altered or damaged" in done.stderr and "Traceback" not in done.stderr
    with snap.open_timeline(url) as store:
        assert store.runs == []


def _shared_blob(location, run_id):
    """The key of a raw blob the run reaches (its program's source, say)."""
    from snapstate_capture.store.maintenance import BlobMarker, run_roots

    with snap.open_timeline(location) as timeline:
        marker = BlobMarker(timeline.engine.blob_row)
        marker.mark(run_roots(timeline.engine, run_id))
        return next(key for key in sorted(marker.live)
                    if timeline.engine.blob_row(key)[0] == 0)  # stored raw


def test_a_damaged_blob_is_neither_pushed_nor_pulled_nor_inherited(pg_server, tmp_path):
    """Push left a blob already in the store as it was, and neither end re-hashed blobs: a run
    reaching a damaged one was pushed and pulled with exit 0, and a new run sharing it
    inherited the damage (helper-40: 3 of 3). Each end now reads and checks what the run
    reaches."""
    import psycopg

    url = pg_server.create_database("damaged")
    first = tmp_path / "first.snap"
    run_id = _record(first, tmp_path)
    assert _cli("push", str(first), url, "--run", run_id).returncode == 0
    key = _shared_blob(url, run_id)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE snapstate.blobs SET data = %s WHERE hash = %s", (b"damaged!", key))
    pulled = _cli("pull", url, "--run", run_id, "-o", str(tmp_path / "back.snap"))
    assert pulled.returncode == 2 and "damaged" not in pulled.stdout, pulled.stdout
    assert f"blob {key.hex()[:12]}" in pulled.stderr and "Traceback" not in pulled.stderr
    second = tmp_path / "second.snap"
    other = _record(second, tmp_path)  # the same program: the same source blobs
    pushed = _cli("push", str(second), url, "--run", other)
    assert pushed.returncode == 2, pushed.stdout + pushed.stderr
    assert f"holds blob {key.hex()[:12]}" in pushed.stderr and "nothing was copied" in pushed.stderr
    with snap.open_timeline(url) as store:
        assert [run.id for run in store.runs] == [run_id]
