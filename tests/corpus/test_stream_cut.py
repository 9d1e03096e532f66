"""A streamed model call the consumer stops taking (a ``break`` out of its loop) is journaled
with the chunks it got: replay serves those, stops where the program stopped, and the model is
not called again (issue 16: a cut stream was never journaled, so replay found no call).

A stream that breaks after some chunks (the connection reset, the program's deadline) is
journaled with its error and the chunks the consumer got first: replay gives those chunks,
then the error — the program's own ``CancelledError`` for a deadline, which comes again —
where it used to raise the recorded error at the first chunk."""

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
    path, env, counts = _recorded(tmp_path, ["--async"] if way == "async" else [],
                                  "['one', ' ']")
    with snap.open_timeline(path) as timeline:
        steps = list(timeline.runs[-1].steps)
        assert [(s.kind, s.label) for s in steps] == [("effect", "model.Counting"),
                                                       ("checkpoint", "got")]
        assert steps[0].extra["result"].preview["len"] == 2
    _replays_without_the_model(path, env, counts, tmp_path)


@pytest.mark.parametrize("args, printed, error", [
    (["--fail"], "['one', ' ', 'error: stream reset by peer']", "ConnectionError"),
    (["--async", "--fail"], "['one', ' ', 'error: stream reset by peer']", "ConnectionError"),
    (["--async", "--deadline"], "['one', ' ', 'timed out']", "CancelledError"),
], ids=["sync-error", "async-error", "async-deadline"])
def test_a_stream_that_broke_replays_its_chunks_then_its_error(tmp_path, args, printed, error):
    path, env, counts = _recorded(tmp_path, args, printed)
    with snap.open_timeline(path) as timeline:
        effect, checkpoint = timeline.runs[-1].steps
        assert (effect.kind, checkpoint.kind) == ("effect", "checkpoint")
        assert effect.extra["exception"].repr.startswith(error + "(")
        assert effect.extra["chunks"].preview["len"] == 2  # what the consumer got first
        assert [f.function for f in effect.frames] == [
            "<module>", "consume_async" if "--async" in args else "consume"]
    _replays_without_the_model(path, env, counts, tmp_path)


def test_two_streams_consumed_together_interleave_on_replay_as_recorded(tmp_path):
    """A served stream gave all its chunks without a pass of the event loop between them:
    two streams gathered into one list came out one after the other (helper-38, 6 of 6).
    Each chunk comes a pass apart now, as the recorded stream's did; the journal notes a
    stream none of whose chunks suspended (``"u"``), served without passes."""
    alternating = "['x:one', 'y:one', 'x: ', 'y: ', 'x:two', 'y:two', 'x: ', 'y: ', " \
        "'x:three', 'y:three']"
    counts = tmp_path / "counts.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUT_COUNTS": str(counts),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    path = tmp_path / "cut.snap"
    done = subprocess.run([sys.executable, str(PROGRAM), str(path), "--interleave"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == alternating
    counts.unlink()
    with snap.open_timeline(path) as timeline:
        got = [s.extra["got"].repr for s in timeline.runs[-1].steps if s.label == "got"]
    assert got == [alternating]
    _replays_without_the_model(path, env, counts, tmp_path, steps=3)


def _recorded(tmp_path, args, printed):
    """Record the program with ``args``; check it printed ``printed`` and called the model
    once. Returns the file, the environment and the model's call log."""
    counts = tmp_path / "counts.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUT_COUNTS": str(counts),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    path = tmp_path / "cut.snap"
    done = subprocess.run([sys.executable, str(PROGRAM), str(path), *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == printed
    assert counts.read_text().splitlines() == ["model"]
    counts.unlink()
    return path, env, counts


def _replays_without_the_model(path, env, counts, tmp_path, steps=2):
    for _ in range(2):
        result = run_cli("replay", str(path), "--trust", env=env, cwd=tmp_path, timeout=240)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"replayed {steps} steps, no divergence" in result.stdout
    assert not counts.exists()  # the model was not called again
