"""verify reads every blob a run reaches — through trace chunks, preview children, payload pieces,
the effect journal and the entry — and tells a live file from a damaged one (issue 22, point 6)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import snapstate_capture as snap
from snapstate_capture.store import blobs, chunks
from snapstate_capture.trust.verify import verify_timeline
from tests.conftest import PROGRAMS, ROOT, run_cli
from tests.hostile import connect


def _traced_work(n):
    basket = []
    for i in range(n):
        basket.append({"item": i, "name": f"thing {i}"})
        label = "x" * 300 + str(i)  # a long string: stored as a blob, not inline
    return basket, label


def _verify(path):
    with snap.open_timeline(path) as timeline:
        return verify_timeline(timeline, None)


def _delete_blob(path, key_hex):
    conn = connect(path)
    assert conn.execute("DELETE FROM blobs WHERE hash=?", (bytes.fromhex(key_hex),)).rowcount
    conn.close()


def _keys_outside_chunks(path):
    """Every blob key named by the file's step rows, frame records and effects (hex)."""
    conn = connect(path)
    text = " ".join(str(row) for table in ("steps", "effects", "runs")
                    for row in conn.execute(f"SELECT * FROM {table}"))
    for (data,) in conn.execute("SELECT data FROM blobs"):
        text += repr(data)
    conn.close()
    return text


def test_a_blob_reached_only_through_a_trace_chunk_is_checked(snap_path, no_key_can_be_made):
    with snap.record(snap_path, trace="lines", include=[__file__]):
        _traced_work(30)
    conn = connect(snap_path)
    first, data = conn.execute("SELECT first, data FROM trace_chunks ORDER BY first").fetchone()
    conn.close()
    elsewhere = _keys_outside_chunks(snap_path)
    only_here = [(key, kind) for key, kind in chunks.blob_keys(*chunks.decode(data))
                 if key not in elsewhere]
    assert only_here, "the traced values should be blobs named by the chunk alone"
    key, kind = only_here[0]
    assert _verify(snap_path).intact
    _delete_blob(snap_path, key)
    report = _verify(snap_path)
    problem = report.runs[0].corrupt[key]
    assert problem.problem == "missing" and problem.kind == kind and first in problem.steps
    done = run_cli("verify", str(snap_path))
    assert done.returncode == 1 and key[:12] in done.stdout


def test_preview_children_and_payload_pieces_are_reached(snap_path, no_key_can_be_made):
    with snap.record(snap_path):
        big = [{"row": i, "text": f"line {i}"} for i in range(400)]  # children by reference
        snap.checkpoint("big")
        big.append({"row": 400})
        snap.checkpoint("bigger")
    conn = connect(snap_path)
    rows = conn.execute("SELECT hash, codec, size, data FROM blobs").fetchall()
    conn.close()
    source = blobs.BlobSource(lambda k: next(((c, s, d) for h, c, s, d in rows if h == k), None))
    kids, pieces = [], []
    for key, codec, _, _ in rows:
        is_manifest, inner = source.inner(key)
        if is_manifest:
            pieces.extend(blobs.manifest_pieces(inner))
        elif inner[:1] == b"{":
            record = json.loads(inner)
            if isinstance(record.get("kids"), str):
                kids.append(record["kids"])
    assert kids and pieces
    for doomed, kind in ((kids[0], "preview children"), (pieces[-1].hex(), "payload piece")):
        path = snap_path.with_name(f"{kind.replace(' ', '_')}.snap")
        path.write_bytes(snap_path.read_bytes())
        _delete_blob(path, doomed)
        report = _verify(path)
        assert not report.intact
        assert report.runs[0].corrupt[doomed].kind == kind


def test_entry_and_effect_blobs_are_reached(snap_path, no_key_can_be_made):
    import random

    @snap.effect(name="draw")
    def draw():
        return random.random()

    with snap.record(snap_path):
        value = draw()
        snap.checkpoint("drew", value=value)
    conn = connect(snap_path)
    entry = json.loads(conn.execute("SELECT entry FROM runs").fetchone()[0])
    effect = json.loads(conn.execute("SELECT value FROM effects").fetchone()[0])
    conn.close()
    rng_key = next(iter(entry["rng"].values()))
    for doomed in (rng_key, effect["a"], effect["p"]):
        path = snap_path.with_name(f"{doomed[:8]}.snap")
        path.write_bytes(snap_path.read_bytes())
        _delete_blob(path, doomed)
        assert doomed in _verify(path).runs[0].corrupt


def test_verify_on_a_file_being_recorded_reports_no_corruption(tmp_path, no_key_can_be_made):
    path = tmp_path / "live.snap"
    child = subprocess.Popen(
        [sys.executable, str(PROGRAMS / "integrity_program.py"), str(path), "checkpoint",
         "100000"], stdout=subprocess.PIPE, text=True,
        env={**_env(), "PYTHONPATH": str(ROOT), "INTEGRITY_PAUSE": "0.002"})
    try:
        for _ in range(20):
            child.stdout.readline()
        reports = []
        for _ in range(8):
            reports.append(_verify(path))
            time.sleep(0.02)
        cli = run_cli("verify", str(path), "--json")
        assert child.poll() is None, "the recorder should still be running"
    finally:
        child.kill()
        child.wait()
    for report in reports:
        run = report.runs[0]
        assert report.intact, (run.chain_problem, run.corrupt)
        assert run.live and run.status == "running" and run.steps >= 20
    assert reports[-1].runs[0].steps > reports[0].runs[0].steps  # it was growing meanwhile
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert json.loads(cli.stdout)["runs"][0]["live"]


def _env():
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_effects_that_end_out_of_their_starting_order_still_verify(snap_path, no_key_can_be_made):
    """Two tools of one model turn run in a thread pool (LangGraph's ToolNode): the first to
    start is the last to end. The journal is numbered in the order it is written, the order
    the seal chains it in, so the run verifies (it failed about one run in twelve)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    second_done = threading.Event()

    @snap.effect(name="slow")
    def slow():
        assert second_done.wait(10)
        return "slow"

    @snap.effect(name="fast")
    def fast():
        return "fast"

    def fast_then_signal():
        try:
            return fast()
        finally:
            second_done.set()

    with snap.record(snap_path):
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(slow)  # starts first: takes the first number
            while not first.running():
                pass
            results = [pool.submit(fast_then_signal).result(), first.result()]
    assert results == ["fast", "slow"]
    with snap.open_timeline(snap_path) as timeline:
        names = [row[5] for row in timeline.engine.effect_rows(timeline.runs[-1].id)]
    assert names == ["fast", "slow"]  # journal order: the order the calls ended
    report = _verify(snap_path)
    run = report.runs[0]
    assert report.intact, (run.chain_problem, run.corrupt)


def test_a_run_whose_rows_cannot_be_read_is_reported_beside_the_intact_ones(
        snap_path, no_key_can_be_made):
    """A damaged byte in a step row's run id made all of ``verify`` one "damaged timeline"
    line with exit 2 and no verdict for the intact run (helper-40)."""
    for name in ("intact", "damaged"):
        with snap.record(snap_path, name=name):
            for i in range(5):
                snap.checkpoint("step", i=i)
    with snap.open_timeline(snap_path) as timeline:
        intact, damaged = (run.id for run in timeline.runs)
    conn = connect(snap_path)
    conn.execute("UPDATE steps SET run_id = CAST(? AS TEXT) WHERE run_id = ? AND idx = 3",
                 (damaged[:-2].encode() + b"\xff\xfe", damaged))
    conn.close()
    done = run_cli("verify", str(snap_path))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith(f"run {intact[:8]} intact") for line in lines), done.stdout
    assert "chain broken at step 3" in done.stdout or "cannot be read" in done.stdout
    assert any(line.startswith("damaged: rows whose run cannot be read") for line in lines)
    assert lines[-1].startswith("FAILED") and "Traceback" not in done.stderr
