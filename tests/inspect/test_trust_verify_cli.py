"""``snapstate verify``: per-run verdicts, named steps for a corrupt payload, exit codes."""

from __future__ import annotations

import json

import snapstate_capture as snap
from snapstate_capture.trust import keys
from tests.conftest import run_cli
from tests.hostile import connect, flip_byte, payload_keys


def _record(path, name="job", steps=4):
    with snap.record(path, name=name):
        for i in range(steps):
            state = {"i": i, "seen": list(range(i))}
            snap.checkpoint(f"c{i}")
    assert state


def test_verify_own_signed_file(snap_path):
    key = keys.generate_key()
    _record(snap_path)
    result = run_cli("verify", str(snap_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"signed by this key {key.key_id}" in result.stdout
    assert "ok: nothing altered or corrupt" in result.stdout
    assert run_cli("verify", "--signed", str(snap_path)).returncode == 0


def test_verify_unsigned_file_passes_unless_signed_is_required(snap_path, no_key_can_be_made):
    _record(snap_path)
    result = run_cli("verify", str(snap_path))
    assert result.returncode == 0 and "unsigned" in result.stdout
    strict = run_cli("verify", "--signed", str(snap_path))
    assert strict.returncode == 1 and "not every run is signed" in strict.stdout


def test_one_flipped_payload_byte_names_the_affected_steps(snap_path):
    keys.generate_key()
    _record(snap_path, steps=5)
    key = payload_keys(snap_path)[-1]
    flip_byte(snap_path, key)
    data = json.loads(run_cli("verify", "--json", str(snap_path)).stdout)
    run = data["runs"][0]
    corrupt = run["corrupt"][key.hex()]
    assert corrupt["kind"] == "payload" and corrupt["steps"]
    assert data["intact"] is False and run["signature"] == "valid"
    result = run_cli("verify", str(snap_path))
    assert result.returncode == 1
    steps = ", ".join(str(s) for s in corrupt["steps"])
    assert f"payload {key.hex()[:12]} corrupt (hash mismatch): used by step" in result.stdout
    assert steps in result.stdout
    assert "FAILED" in result.stdout


def test_verify_reports_each_run_separately(snap_path):
    keys.generate_key()
    _record(snap_path, name="first")
    _record(snap_path, name="second", steps=6)
    conn = connect(snap_path)
    second = conn.execute("SELECT id FROM runs WHERE name='second'").fetchone()[0]
    conn.execute("UPDATE steps SET thread='evil' WHERE run_id=? AND idx=4", (second,))
    conn.close()
    result = run_cli("verify", str(snap_path))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    first_line = next(line for line in lines if " first " in line)
    assert "signed by this key" in first_line
    assert "chain broken at step 4: step 4 was altered" in result.stdout


def test_verify_unreadable_file_is_one_line_exit_2(tmp_path):
    path = tmp_path / "nope.snap"
    path.write_text("not a timeline")
    result = run_cli("verify", str(path))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and str(path) in result.stderr
