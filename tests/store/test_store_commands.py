"""``replay``, ``resume``, ``gc`` and ``export`` take a store URL like the other commands: a run
recorded into a real PostgreSQL store replays from it without divergence (effects served, never
run again), forks into it, a killed run resumes from it, and gc and export work on it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import snapstate_capture as snap
from tests.conftest import PROGRAMS, ROOT, run_cli
from tests.store.test_spooled_recording import _spools_stored


def _env(tmp_path) -> dict[str, str]:
    return {"SNAPSTATE_SPOOL_DIR": str(tmp_path / "spool")}


def _record(url, tmp_path, rounds: str, *extra: str) -> subprocess.Popen:
    env = {**os.environ, **_env(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.Popen([sys.executable, str(PROGRAMS / "replay_agent.py"), url,
                             str(tmp_path / "side.txt"), rounds, *extra], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _runs(url) -> list:
    with snap.open_timeline(url) as timeline:
        return [(r.id, r.name, r.status, len(r.steps), r.parent) for r in timeline.runs]


def test_replay_fork_and_resume_from_a_store(pg_server, tmp_path):
    url = pg_server.create_database("replay_store")
    done = _record(url, tmp_path, "3")
    assert done.wait(timeout=60) == 0, done.stderr.read()
    ((run_id, _, status, steps, _),) = _runs(url)
    assert status == "finished"
    side_before = (tmp_path / "side.txt").read_text()
    replayed = run_cli("replay", url, "--run", run_id[:8], "--json", env=_env(tmp_path),
                       timeout=120)
    assert replayed.returncode == 0, replayed.stderr
    result = json.loads(replayed.stdout[replayed.stdout.find("{\n"):])
    assert result["status"] == "ok" and result["replayed"] == result["total"] == steps
    assert (tmp_path / "side.txt").read_text() == side_before  # every effect was served
    forked = run_cli("replay", url, "--run", run_id[:8], "--to", "4", "--live",
                     env=_env(tmp_path), timeout=120)
    assert forked.returncode == 0, forked.stderr
    fork = [r for r in _runs(url) if r[4] is not None]
    assert [(f[2], f[4].run_id, f[4].step) for f in fork] == [("finished", run_id, 4)]

    killed = _record(url, tmp_path, "12", "--slow")
    for _ in range(3):  # a few steps in, then killed
        assert killed.stdout.readline()
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(timeout=30)
    _spools_stored(tmp_path / "spool")  # its writer stores what it had spooled, then ends
    crashed = [r for r in _runs(url) if r[2] == "crashed"]
    assert len(crashed) == 1
    resumed = run_cli("resume", url, "--run", crashed[0][0][:8], env=_env(tmp_path), timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert "continued as" in resumed.stdout
    continued = [r for r in _runs(url) if r[4] is not None and r[4].run_id == crashed[0][0]]
    assert [r[2] for r in continued] == ["finished"] and continued[0][3] > crashed[0][3]


def test_gc_and_export_on_a_store(pg_server, tmp_path):
    url = pg_server.create_database("gc_store")
    for _ in range(2):
        done = _record(url, tmp_path, "2")
        assert done.wait(timeout=60) == 0, done.stderr.read()
    first, second = _runs(url)
    out = tmp_path / "one.snap"
    exported = run_cli("export", url, "--run", second[0][:8], "--step", "3", "-o", str(out))
    assert exported.returncode == 0, exported.stderr
    with snap.open_timeline(out) as timeline:
        assert len(timeline.runs) == 1 and len(timeline.runs[0].steps) == 1
    dry = run_cli("gc", url, "--keep-runs", "1", "--dry-run")
    assert dry.returncode == 0 and "would remove 1 run(s)" in dry.stdout, dry.stderr
    assert len(_runs(url)) == 2
    gone = run_cli("gc", url, "--keep-runs", "1", "--json")
    assert gone.returncode == 0, gone.stderr
    assert [r["id"] for r in json.loads(gone.stdout)["removed_runs"]] == [first[0]]
    assert [r[0] for r in _runs(url)] == [second[0]]
    verified = run_cli("verify", url)
    assert verified.returncode == 0, verified.stdout + verified.stderr
