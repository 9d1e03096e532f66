"""A traced run's effect steps go to the trace writer's pipe without waiting for it to store
them (``StreamWriter.append_step``): the program never waits on the writer's backlog — a
traced run's first effect waited for the writer process to start (~0.2 s, over a second under
load: an ``asyncio.wait_for`` around it timed out when recorded) — and a recorder killed just
after an effect returned still has its step and journal row stored."""

from __future__ import annotations

import signal

import snapstate_capture as snap
from snapstate_capture.tracing.stream import Stream
from tests.conftest import run_python


@snap.effect(name="fetch")
def fetch(n: int) -> int:
    return n * 2


def test_effects_of_a_traced_run_do_not_ask_the_writer(snap_path, monkeypatch):
    asked = []
    original = Stream.request_index

    def counting(self):
        asked.append(self)
        return original(self)

    monkeypatch.setattr(Stream, "request_index", counting)
    with snap.record(snap_path, trace="calls"):
        answers = [fetch(n) for n in range(3)]
        assert asked == []  # three effects, not one round trip to the writer
        index = snap.checkpoint("after")  # a checkpoint is handed its index: it asks
        assert len(asked) == 1
    assert answers == [0, 2, 4]
    with snap.open_timeline(snap_path) as timeline:
        run = timeline.runs[-1]
        steps = [(s.kind, s.label) for s in run.steps if s.kind in ("effect", "checkpoint")]
        assert steps == [("effect", "fetch")] * 3 + [("checkpoint", "after")]
        assert run.steps[index].label == "after"


KILLED = """\
import os, signal, sys
import snapstate_capture as snap

@snap.effect(name="charge")
def charge(amount):
    return f"charged {amount}"

with snap.record(sys.argv[1], trace="calls"):
    charge(10)
    charge(20)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_recorder_killed_after_an_effect_keeps_its_journal_row(tmp_path):
    (tmp_path / "killed.py").write_text(KILLED)
    path = tmp_path / "killed.snap"
    done = run_python("killed.py", str(path), cwd=tmp_path)
    assert done.returncode == -signal.SIGKILL
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        effects = [s for s in run.steps if s.kind == "effect"]
        assert [s.extra["result"].repr for s in effects] == ["'charged 10'", "'charged 20'"]
        assert run.status in ("crashed", "running")
