"""A recorder killed with SIGKILL at random moments leaves a file that opens, with every step
completed before the kill intact, and the run reported ``crashed``."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

import snapstate_capture as snap
from tests.conftest import PROGRAMS, ROOT

KILLS = 50


def _kill_after(path, wait_steps, rng):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, str(PROGRAMS / "crash_loop.py"), str(path)],
                             stdout=subprocess.PIPE, text=True, env=env)
    completed = -1
    assert child.stdout is not None
    while completed < wait_steps:
        line = child.stdout.readline()
        if not line:
            break
        completed = int(line)
    time.sleep(rng.random() * 0.02)  # land anywhere inside a later step
    child.send_signal(signal.SIGKILL)
    child.wait()
    return completed


@pytest.mark.parametrize("batch", range(5))
def test_sigkill_keeps_completed_steps(tmp_path, batch):
    rng = random.Random(batch)
    for kill in range(KILLS // 5):
        path = tmp_path / f"kill{kill}.snap"
        completed = _kill_after(path, rng.randrange(0, 40), rng)
        assert completed >= 0
        with snap.open_timeline(path) as timeline:
            run = timeline.runs[-1]
            assert run.status == "crashed"
            steps = run.steps
            assert len(steps) >= completed + 1
            for step in steps:
                innermost = step.frames[-1]
                state = innermost.locals["state"].preview
                assert state["type"] == "builtins.dict"
                assert step.extra["i"].repr == str(step.index)
        assert os.path.getsize(path) > 0
