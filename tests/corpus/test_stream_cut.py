"""A streamed model call the consumer stops taking (a ``break`` out of its loop) is journaled
with the chunks it got: replay serves those, stops where the program stopped, and the model is
not called again (issue 16: a cut stream was never journaled, so replay found no call)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import snapstate_capture as snap
from tests.conftest import ROOT, run_cli

pytest.importorskip("langchain_core")
PROGRAM = Path(__file__).resolve().parent / "programs" / "stream_cut.py"


@pytest.mark.parametrize("way", ["sync", "async"])
def test_a_stream_cut_short_is_journaled_with_what_the_consumer_got(tmp_path, way):
    counts = tmp_path / "counts.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUT_COUNTS": str(counts),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    path = tmp_path / "cut.snap"
    args = [sys.executable, str(PROGRAM), str(path)] + (["--async"] if way == "async" else [])
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == "['one', ' ']"
    assert counts.read_text().splitlines() == ["model"]
    with snap.open_timeline(path) as timeline:
        steps = list(timeline.runs[-1].steps)
        assert [(s.kind, s.label) for s in steps] == [("effect", "model.Counting"),
                                                       ("checkpoint", "got")]
        assert steps[0].extra["result"].preview["len"] == 2
    counts.unlink()
    for _ in range(2):
        result = run_cli("replay", str(path), "--trust", env=env, cwd=tmp_path, timeout=240)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "replayed 2 steps, no divergence" in result.stdout
    assert not counts.exists()  # the model was not called again
