"""A traced run's effect step is stored before the effect returns (``StreamWriter.append_step``
asks the trace writer): a recorder killed just after an effect returned has its step and
journal row in the file, so a resume does not run the effect again. (Handing the step to the
writer's pipe without waiting was tried: the writer stored it moments after the recorder
died, and the file opened right after the kill had no effect step in 1 of 4 runs — what a
resume reads to know which effects not to run again.)"""

from __future__ import annotations

import signal

import snapstate_capture as snap
from tests.conftest import run_python


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
