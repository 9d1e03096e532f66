"""One resumer at a time, with real processes (issue 17 point 4): two concurrent resumes of
one waiting run continue it exactly once (20 trials in 20); a resumer killed with SIGKILL in
the middle of the continuation leaves a lease that expires, and a second resume finishes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import snapstate_capture as snap
from snapstate_capture.store.leases import LeaseHeld, LeaseStore
from tests.conftest import PROGRAMS, ROOT, run_cli, run_python
from tests.e2e.replay_helpers import runs_json, side_lines

TRIALS = 20
AT_ONCE = 5  # trials started together (each is two resumers)


@pytest.fixture(autouse=True)
def user_key(isolated_user_config):
    from snapstate_capture.trust import keys

    return keys.generate_key()


def _resumer(path: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    full = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "snapstate_inspect", "resume", str(path),
                             *args], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def test_two_concurrent_resumes_continue_a_run_exactly_once(tmp_path):
    side = tmp_path / "side.txt"
    first = tmp_path / "waiting.snap"
    done = run_python(str(PROGRAMS / "durable_agent.py"), str(first), str(side), cwd=tmp_path)
    assert done.returncode == 75, done.stderr
    copies = [shutil.copy(first, tmp_path / f"trial{i}.snap") for i in range(TRIALS)]
    outcomes = []
    for batch in range(0, TRIALS, AT_ONCE):
        pairs = [(_resumer(Path(c), "--answer", "yes"), _resumer(Path(c), "--answer", "yes"))
                 for c in copies[batch:batch + AT_ONCE]]
        for a, b in pairs:
            outcomes.append([(p.wait(timeout=120), *p.communicate()) for p in (a, b)])
    for trial, (copy, pair) in enumerate(zip(copies, outcomes)):
        codes = sorted(code for code, _, _ in pair)
        assert codes == [2, 75], (trial, pair)
        refused = next(err for code, _, err in pair if code == 2)
        assert ("is being resumed by" in refused or "was already continued as" in refused), \
            refused
        runs = runs_json(Path(copy))
        assert len(runs) == 2 and runs[1]["parent"]["run"] == runs[0]["id"]
        assert runs[0]["continued_as"] == runs[1]["id"]
    # the effect after the wait ran once per trial, never twice
    assert side_lines(side).count("draft cats (yes)") == TRIALS


def test_a_killed_resumers_lease_is_taken_before_it_expires_and_a_second_resume_finishes(
        tmp_path):
    """A resumer killed on this machine leaves a lease that has not expired; its process is
    gone, so the next resume takes the lease once a heartbeat was missed (a third of the lease
    time), before it expires (on another machine it waits the lease out:
    ``tests/capture/test_durable_leases.py``)."""
    path, side = tmp_path / "slow.snap", tmp_path / "side.txt"
    env = {"SNAPSTATE_LEASE_SECONDS": "30"}
    done = run_python(str(PROGRAMS / "durable_timed.py"), "slow", str(path), str(side),
                      cwd=tmp_path)
    assert done.returncode == 75, done.stderr
    first = _resumer(path, "--answer", "yes", "--by", "alice", env=env)
    deadline = time.monotonic() + 60
    while "after yes" not in side_lines(side):  # the continuation is under way, blocked
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    time.sleep(0.2)  # its checkpoint is written after the effect
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    waiting = runs_json(path)[0]["id"]
    with snap.open_timeline(path) as timeline:
        dead = timeline.leases()[waiting].holder
    assert dead.pid == first.pid
    refused = run_cli("resume", str(path), "--run", waiting, "--answer", "yes", env=env)
    if time.time() < dead.renewed + 10:  # (a loaded machine may be past the heartbeat here)
        assert refused.returncode != 0
        assert f"(pid {first.pid})" in refused.stderr and "its process is gone" in refused.stderr
    time.sleep(max(0.0, dead.renewed + 12.5 - time.time()))  # a heartbeat missed, not expired
    (tmp_path / "side.txt.go").write_text("")
    assert time.time() < dead.expires - 5  # what lets the next resume in is not the expiry
    second = run_cli("resume", str(path), "--run", waiting, "--answer", "yes", env=env)
    assert second.returncode == 0, second.stderr
    assert "whose resumer stopped" in second.stdout
    assert "final: after yes done finish done" in second.stdout
    assert side_lines(side) == ["after yes", "finish"]  # nothing ran twice
    runs = runs_json(path)
    assert [r["status"] for r in runs] == ["waiting", "crashed", "finished"]
    assert runs[0]["continued_as"] == runs[1]["id"] and runs[1]["continued_as"] == runs[2]["id"]
    with snap.open_timeline(path) as timeline:
        assert timeline.runs[0].continued_as == timeline.runs[1].id


def test_a_resume_refused_while_the_continuation_runs_leaves_the_continuation_whole(tmp_path):
    """A second ``snapstate resume`` of a crashed run while the first one's continuation is
    live (the file's last run is then that continuation, still running) is refused, and the
    continuation goes on recording to its end. It lost every step after the refusal: opening
    the file for the refusal's checks had closed a plain descriptor of it in the replay
    child, which dropped the POSIX locks of its SQLite connections, so the refusing command
    could take the file out of WAL mode under the live writer
    (``store/sqlite/connection.check_readable``)."""
    path, side = tmp_path / "crash.snap", tmp_path / "side.txt"
    crashed = run_python(str(PROGRAMS / "durable_timed.py"), "crash", str(path), str(side),
                         cwd=tmp_path)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    first = _resumer(path)
    deadline = time.monotonic() + 60
    while "two" not in side_lines(side):  # the continuation is live, held at its gate
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    time.sleep(0.3)  # its checkpoint is written after the effect
    refused = run_cli("resume", str(path))
    assert refused.returncode == 2 and "is still running" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    (tmp_path / "side.txt.go").write_text("")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert "final: two done three done" in out
    runs = runs_json(path)
    assert [r["status"] for r in runs] == ["crashed", "finished"]
    with snap.open_timeline(path) as timeline:
        labels = [step.label for step in timeline.runs[1].steps]
    assert "work" in labels[labels.index("blocked"):]  # the last effect, after the refusal
    assert side_lines(side) == ["one", "two", "three"]  # and nothing ran twice
