"""The README's durable agents walkthrough, command by command (issue 17 point 7): two
approvals from two reviewers, a refused answer, a rate limit that puts the run to sleep, the
worker that wakes it."""

from __future__ import annotations

import time

import pytest

from tests.conftest import ROOT, run_cli, run_python
from tests.e2e.replay_helpers import runs_json

FAST = {"APPROVAL_RATE_LIMIT_SECONDS": "2", "SNAPSTATE_HOLD_SECONDS": "0"}


@pytest.fixture(autouse=True)
def user_key(isolated_user_config):
    from snapstate_capture.trust import keys

    return keys.generate_key()


def test_the_walkthrough_answers_each_wait_from_the_command_line(tmp_path):
    path = tmp_path / "calendar.snap"
    started = run_python("-m", "examples.approval_agent", "--out", str(path), cwd=ROOT,
                         env=FAST)
    assert started.returncode == 75, started.stderr
    assert "waiting for 'editor'" in started.stderr and "--answer-json JSON" in started.stderr
    listed = run_cli("waiting", str(tmp_path))
    assert "waiting for 'editor'" in listed.stdout and "Approve 6 posts" in listed.stdout
    refused = run_cli("resume", str(path), "--answer-json", '{"approved": "ok"}', env=FAST)
    assert refused.returncode == 2
    assert "$.approved: 'ok' is not of type 'boolean'" in refused.stderr
    editor = run_cli("resume", str(path), "--answer-json",
                     '{"approved": true, "drop": [2], "note": "ship it"}', "--by", "alice",
                     cwd=ROOT, env=FAST)
    assert editor.returncode == 75 and "waiting for 'legal'" in editor.stdout, editor.stderr
    legal = run_cli("resume", str(path), "--answer-json", '{"approved": true}', "--by", "bob",
                    cwd=ROOT, env=FAST)
    assert legal.returncode == 75 and "sleeping until" in legal.stdout, legal.stderr
    pause = runs_json(path)[-1]["pause"]
    assert pause["reason"] == "retry scheduler after RateLimited (attempt 2 of 4)"
    time.sleep(max(0.0, pause["due"] - time.time()) + 0.1)
    woke = run_cli("worker", str(path), "--once", cwd=ROOT, env=FAST)
    assert "woke: continued as" in woke.stdout and "(finished)" in woke.stdout, woke.stderr
    assert [r["status"] for r in runs_json(path)] == ["waiting", "waiting", "sleeping",
                                                      "finished"]
    shown = run_cli("show", str(path), "--step", "3")
    assert "effect  editor" in shown.stdout and "'alice'" in shown.stdout, shown.stdout
    replayed = run_cli("replay", str(path), cwd=ROOT)
    assert replayed.returncode == 0 and "no divergence" in replayed.stdout, replayed.stderr
