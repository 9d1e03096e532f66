"""Honesty: nondeterminism routed through the journal replays exactly; a source that is not
recorded shows up as a divergence, never silently; recorded input is replayed by default and
``--live-effects input`` reads it live."""

from __future__ import annotations

import snapstate_capture as snap
from tests.conftest import PROGRAMS, run_python
from tests.e2e.replay_helpers import replay_json


def _record(tmp_path, *args):
    path = tmp_path / "honest.snap"
    done = run_python(str(PROGRAMS / "honest.py"), str(path), *args, input="alice\n",
                      cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "hello alice" in done.stdout
    return path


def _step(path, label):
    with snap.open_timeline(path) as timeline:
        return next(s.index for s in timeline.runs[-1].steps if s.label == label)


def test_routed_sources_and_recorded_input_replay_exactly(tmp_path):
    path = _record(tmp_path)
    with snap.open_timeline(path) as timeline:
        labels = [s.label for s in timeline.runs[-1].steps if s.kind == "effect"]
    assert labels[:5] == ["input", "time.time", "time.monotonic", "uuid.uuid4", "os.urandom"]
    assert labels[5:] == ["random.randint"] * 3 + ["random.random"]
    result, data = replay_json(path, input="")  # nobody types: the recorded answer is served
    assert result.returncode == 0, result.stderr
    assert data["status"] == "ok" and "hello alice" in result.stdout
    assert "name? " not in result.stdout  # input() itself never ran


def test_live_input_is_read_and_a_different_answer_diverges(tmp_path):
    path = _record(tmp_path)
    same, data = replay_json(path, "--live-effects", "input", input="alice\n")
    assert same.returncode == 0, same.stderr
    assert "name? " in same.stdout and data["status"] == "ok"
    other, data = replay_json(path, "--live-effects", "input", input="bob\n")
    assert other.returncode == 1
    report = data["divergence"]
    assert report["step"] == 0 and report["expected"]["label"] == "input"
    result = {v["name"]: v for v in report["variables"]}["result"]
    assert (result["expected"], result["actual"]) == ("'alice'", "'bob'")


def test_an_unrecorded_source_is_a_divergence(tmp_path):
    path = _record(tmp_path, "leak")
    result, data = replay_json(path)
    assert result.returncode == 1
    report = data["divergence"]
    assert report["step"] == _step(path, "leaked")
    assert [v["name"] for v in report["variables"]] == ["fresh"]
