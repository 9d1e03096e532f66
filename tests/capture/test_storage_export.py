"""``snapstate export``: one step as a standalone file that reads exactly like the original."""

from __future__ import annotations

import os
import sqlite3

import snapstate_capture as snap
from snapstate_capture.store.maintenance import export_step
from tests.conftest import run_cli


def _view(step):
    return (step.kind, step.label, step.wall_time, step.function, step.lineno,
            [(f.function, f.filename, f.lineno, f.source,
              {n: (v.preview, v.digest, _loaded(v)) for n, v in f.locals.items()})
             for f in step.frames],
            {n: (v.preview, _loaded(v)) for n, v in step.extra.items()})


def _loaded(value):
    """What loading a payload gives, comparably: data as is, other objects by type name."""
    if not value.has_payload:
        return None
    obj = value.load(trust=True)
    return obj if isinstance(obj, (list, dict, int, str, float)) else type(obj).__name__


def _program(path):
    def helper(messages, table):
        snap.checkpoint("inside", note={"k": 1})
        return len(messages)

    messages = [{"role": "user", "content": os.urandom(50).hex()} for _ in range(200)]
    table = {f"k{i}": i for i in range(400)}
    with snap.record(path, name="source"):
        for i in range(6):
            messages.append({"role": "assistant", "content": f"reply {i}"})
            table[f"k{i}"] = -i
            helper(messages, table)


def test_an_exported_step_matches_the_original(tmp_path):
    path, out = tmp_path / "run.snap", tmp_path / "one.snap"
    _program(path)
    report = export_step(path, out, run_id=None, step=4)
    with snap.open_timeline(path, trust=True) as original, \
            snap.open_timeline(out, trust=True) as exported:
        run = exported.runs[-1]
        assert len(exported.runs) == 1 and len(run.steps) == 1 and run.status == "finished"
        assert run.env["exported_from"]["step"] == 4
        assert run.id == report.run_id
        assert _view(run.steps[0]) == _view(original.runs[-1].steps[4])
    assert report.blob_bytes < _stored_bytes(path)  # only what step 4 needs


def _stored_bytes(path):
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT sum(length(data)) FROM blobs").fetchone()[0]
    finally:
        conn.close()


def test_cli_export_opens_with_show_and_verify(tmp_path):
    path, out = tmp_path / "run.snap", tmp_path / "step.snap"
    _program(path)
    done = run_cli("export", str(path), "--step", "-1", "-o", str(out))
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        last = len(timeline.runs[-1].steps) - 1
    assert f": step {last} written as run" in done.stdout  # the step -1 names
    shown = run_cli("show", str(out))
    assert shown.returncode == 0 and "helper" in shown.stdout and "step 0 of 1" in shown.stdout
    assert run_cli("verify", str(out)).returncode == 0
    again = run_cli("export", str(path), "--step", "0", "-o", str(out))
    assert again.returncode == 2 and "already exists" in again.stderr
    missing = run_cli("export", str(path), "--step", "99", "-o", str(tmp_path / "x.snap"))
    assert missing.returncode == 2 and "out of range" in missing.stderr
