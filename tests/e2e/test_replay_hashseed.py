"""Replay runs with the recorded string-hash seed (issue 15 point 2): a program whose steps
follow the iteration order of a set of strings replays without divergence, whether it ran under
``snapstate record`` (which chooses a seed and hides it from the program) or in a ``record()``
block of a process started with ``PYTHONHASHSEED``; a block under a random secret is marked and
its replay says so."""

from __future__ import annotations

import os
import subprocess
import sys

import snapstate_capture as snap
from snapstate_capture.capture import hashseed
from snapstate_capture.replay.launch import RANDOM_SEED_NOTE
from tests.conftest import PROGRAMS, ROOT
from tests.e2e.replay_helpers import replay_json

PROGRAM = PROGRAMS / "set_order.py"


def _run(*args: str, cwd, seed: str | None) -> subprocess.CompletedProcess:
    """``python args`` with PYTHONHASHSEED set to ``seed`` or removed (None)."""
    env = {k: v for k, v in os.environ.items()
           if k not in (hashseed.SEED_ENV, hashseed.HIDDEN_ENV)}
    if seed is not None:
        env[hashseed.SEED_ENV] = seed
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


def _entry(path):
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        ordered = next(s for s in run.steps if s.label == "ordered")
        return run.entry, ordered.extra["order"].repr


def test_snapstate_record_chooses_a_seed_the_program_does_not_see(tmp_path):
    out = tmp_path / "r.snap"
    done = _run("-m", "snapstate_inspect", "record", "-o", str(out), str(PROGRAM),
                cwd=tmp_path, seed=None)
    assert done.returncode == 0, done.stderr
    order, seen = done.stdout.splitlines()[:2]
    assert seen == "PYTHONHASHSEED None"  # as under plain python
    entry, recorded = _entry(out)
    assert isinstance(entry["hash_seed"], int) and entry["hash_seed_env"] is False
    assert recorded == repr(order.split())
    # Each replay (its parent started without a seed) runs under the recorded one.
    for _ in range(3):
        result, data = replay_json(out)
        assert data["status"] == "ok", data
        assert order in result.stdout
        assert "PYTHONHASHSEED None" in result.stdout
        assert not data.get("notes")


def test_record_block_under_a_set_seed_replays_with_it(tmp_path):
    out = tmp_path / "b.snap"
    done = _run(str(PROGRAM), str(out), cwd=tmp_path, seed="1234")
    assert done.returncode == 0, done.stderr
    entry, _ = _entry(out)
    assert entry["hash_seed"] == 1234 and entry["hash_seed_env"] is True
    result, data = replay_json(out)
    assert data["status"] == "ok", data
    assert "PYTHONHASHSEED 1234" in result.stdout  # the program saw it, so it sees it again


def test_record_block_under_a_random_secret_is_marked(tmp_path):
    out = tmp_path / "b.snap"
    done = _run(str(PROGRAM), str(out), cwd=tmp_path, seed=None)
    assert done.returncode == 0, done.stderr
    entry, _ = _entry(out)
    assert entry["hash_seed"] is None
    _, data = replay_json(out)
    # Another random secret orders the names differently: the replay diverges at the step
    # that holds them, and the note says why.
    assert data["status"] == "divergence" and data["divergence"]["step"] == 0
    assert RANDOM_SEED_NOTE in data.get("notes", [])


def test_a_variable_changed_after_start_up_is_not_taken_for_the_seed(tmp_path):
    code = ("import os; os.environ['PYTHONHASHSEED'] = '42'; "
            "from snapstate_capture.capture import hashseed; print(hashseed.recorded_seed())")
    assert _run("-c", code, cwd=tmp_path, seed=None).stdout.strip() == "None"
    assert _run("-c", code, cwd=tmp_path, seed="42").stdout.strip() == "42"
    assert _run("-c", code, cwd=tmp_path, seed="0").stdout.strip() == "0"
