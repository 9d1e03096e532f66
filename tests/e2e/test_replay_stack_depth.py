"""A program that measures its own stack sees the same depth on replay as when it was recorded
(``capture/start_depth.py``). Python-Markdown's inline parser walks ``sys._getframe`` to the
bottom before each nested pattern (``util._get_stack_depth``): under ``snapstate record`` its
stack was 12 frames deep, in the replay child 14 (``runpy``'s frames beneath the child's), and
the traced recording diverged at the first return of that function."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import snapstate_capture as snap
from tests.conftest import ROOT, record_traced_script, run_cli

DEPTH = '''\
import sys


def depth():
    frame, count = sys._getframe(), 0
    while frame is not None:
        frame, count = frame.f_back, count + 1
    return count


def nested(n):
    return depth() if n == 0 else nested(n - 1)


print("depth", depth(), nested(3))
'''


def _console_script(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``snapstate ARGS`` through the console script, as users run it (its frames beneath the
    program are fewer than ``python -m snapstate_inspect``'s)."""
    script = Path(sys.executable).parent / "snapstate"
    if not script.exists():
        pytest.skip("no snapstate console script beside this python")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def _assert_replays(path: Path, cwd: Path) -> None:
    with snap.open_timeline(path) as timeline:
        steps = len(timeline.runs[-1].steps)
    replayed = run_cli("replay", str(path), cwd=cwd, timeout=120)
    assert f"replayed {steps} steps, no divergence" in replayed.stdout, (
        replayed.stdout + replayed.stderr)


@pytest.mark.parametrize("how", ["script", "module"])
def test_a_console_script_recording_replays_at_its_depth(tmp_path, how):
    (tmp_path / "measure.py").write_text(DEPTH)
    path = tmp_path / "measure.snap"
    target = ["measure.py"] if how == "script" else ["-m", "measure"]
    done = _console_script("record", "--trace", "calls", "--include", "*/measure.py",
                           "-o", str(path), *target, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _assert_replays(path, tmp_path)


def test_a_deeper_recording_is_replayed_as_deep(tmp_path):
    """``python -m snapstate_inspect record`` starts the program above ``runpy``'s frames too:
    the replay puts frames of its own beneath the program until it is as deep."""
    path = record_traced_script(tmp_path, "measure.py", DEPTH)
    with snap.open_timeline(path) as timeline:
        assert timeline.runs[-1].entry["start_depth"] > 4
    _assert_replays(path, tmp_path)
