"""Waiting for time with real processes (issue 17 point 3): a long ``sleep_until`` and a retried
rate limit end the run ``sleeping`` with its due time; ``snapstate worker`` resumes it only once
it is due, with a log line per resume."""

from __future__ import annotations

import time

import pytest

import snapstate_capture as snap
from snapstate_capture.durable.resume import NotDue
from snapstate_capture.durable.worker import pending, run_pass, timeline_files
from tests.conftest import PROGRAMS, run_cli, run_python
from tests.e2e.replay_helpers import runs_json, side_lines

PAUSE_AT_ONCE = {"SNAPSTATE_HOLD_SECONDS": "0"}  # every sleep pauses the run


@pytest.fixture(autouse=True)
def user_key(isolated_user_config):
    from snapstate_capture.trust import keys

    return keys.generate_key()


def _record(tmp_path, mode):
    path, side = tmp_path / f"{mode}.snap", tmp_path / "side.txt"
    started = time.time()
    done = run_python(str(PROGRAMS / "durable_timed.py"), mode, str(path), str(side),
                      cwd=tmp_path, env=PAUSE_AT_ONCE)
    assert done.returncode == 75, done.stderr
    assert "is sleeping until" in done.stderr and "snapstate worker" in done.stderr
    return path, side, started


def test_a_sleeping_run_is_woken_by_the_worker_only_once_it_is_due(tmp_path):
    path, side, started = _record(tmp_path, "sleep")
    (run,) = runs_json(path)
    assert run["status"] == "sleeping" and run["pause"]["reason"] == "let the cache cool"
    due = run["pause"]["due"]
    assert started + 2.5 < due < time.time() + 3.5
    # a pass before the due time (in this process: no start-up time to race the clock)
    events = run_pass(timeline_files([tmp_path]))
    before_due = time.time() < due
    if before_due:
        assert events == []
        with pytest.raises(NotDue, match="sleeps until") as refused:
            snap.resume(path)
        assert "snapstate resume --wake" in str(refused.value)  # the way to go on now
        # what a --once pass that resumes nothing says: what is still paused, and when due
        said = pending(timeline_files([tmp_path]))  # "(due now)" once the time has come
        assert said.startswith("nothing due: 1 sleeping run (next due ") or \
            said == "nothing due: 1 sleeping run (due now)", said
    assert [r["status"] for r in runs_json(path)] == ["sleeping"]
    time.sleep(max(0.0, due - time.time()) + 0.1)
    woke = run_cli("worker", str(tmp_path), "--once", env=PAUSE_AT_ONCE)
    assert woke.returncode == 0, woke.stderr
    (line,) = woke.stdout.splitlines()
    assert f"{path} {run['id'][:8]} woke: continued as " in line and "(finished)" in line
    assert side_lines(side) == ["before", "after"]
    runs = runs_json(path)
    assert [r["status"] for r in runs] == ["sleeping", "finished"]
    with snap.open_timeline(path) as timeline:
        wake = [s for s in timeline.runs[-1].steps if s.label == "sleep_until"]
        assert [s.kind for s in wake] == ["waiting", "effect"]
        assert float(wake[1].extra["result"].repr) >= due
    again = run_cli("worker", str(tmp_path), "--once")
    # a woken run is not woken twice
    assert again.stdout.endswith(" nothing due: no paused runs\n"), again.stdout


def test_a_rate_limited_effect_sleeps_and_its_retry_runs_once_resumed(tmp_path):
    path, side, _ = _record(tmp_path, "retry")
    (run,) = runs_json(path)
    assert run["status"] == "sleeping"
    assert run["pause"]["reason"] == "retry fetch after RateLimitError (attempt 2 of 3)"
    assert side_lines(side) == ["fetch https://example.invalid/a attempt 1"]
    time.sleep(max(0.0, run["pause"]["due"] - time.time()) + 0.1)
    woke = run_cli("worker", str(path), "--once", env=PAUSE_AT_ONCE)
    assert "woke: continued as" in woke.stdout and "(finished)" in woke.stdout, woke.stderr
    assert side_lines(side) == ["fetch https://example.invalid/a attempt 1",
                                "fetch https://example.invalid/a attempt 2"]
    replayed = run_cli("replay", str(path))
    assert replayed.returncode == 0 and "no divergence" in replayed.stdout, replayed.stderr


def test_a_short_back_off_sleeps_in_the_process(tmp_path):
    path, side = tmp_path / "r.snap", tmp_path / "side.txt"
    done = run_python(str(PROGRAMS / "durable_timed.py"), "retry", str(path), str(side),
                      cwd=tmp_path, env={"SNAPSTATE_HOLD_SECONDS": "30"})
    assert done.returncode == 0, done.stderr
    assert "final: page https://example.invalid/a" in done.stdout
    assert [r["status"] for r in runs_json(path)] == ["finished"]
    assert len(side_lines(side)) == 2
