"""Traced runs (``snapstate record --trace lines``) replay too: the program runs again inside
the same traced block, effects served (the effect's own traced body is not run), and the two
runs are compared step by step."""

from __future__ import annotations

import shutil

import snapstate_capture as snap
from tests.conftest import PROGRAMS, run_cli
from tests.e2e.replay_helpers import replay_json, side_lines


def _record(tmp_path):
    program = shutil.copy(PROGRAMS / "traced_agent.py", tmp_path / "agent.py")
    path, side = tmp_path / "traced.snap", tmp_path / "side.txt"
    done = run_cli("record", "-o", str(path), "--trace", "lines", str(program), str(side),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return path, side, tmp_path / "agent.py"


def test_traced_run_replays_without_running_effects(tmp_path):
    path, side, _ = _record(tmp_path)
    before = side_lines(side)
    assert len(before) == 5
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        assert run.entry["record"]["trace"] == "lines"
        count = len(run.steps)
        kinds = {s.kind for s in run.steps}
    assert {"line", "call", "return", "effect"} <= kinds
    result, data = replay_json(path)
    assert result.returncode == 0, result.stderr
    assert data["status"] == "ok" and data["replayed"] == count
    result, data = replay_json(path, "--to", "30")
    assert result.returncode == 0, result.stderr
    assert data["message"] == "replayed 31 steps (0-30), no divergence"
    assert side_lines(side) == before


def test_traced_run_diverges_at_the_first_affected_line(tmp_path):
    path, side, program = _record(tmp_path)
    text = program.read_text()
    program.write_text(text.replace("    total += i * 2\n",
                                    "    total += i * 2 if i != 3 else 0\n"))
    result, data = replay_json(path, "--allow-drift")
    assert result.returncode == 1, result.stderr
    report = data["divergence"]
    assert [v["name"] for v in report["variables"]] == ["total"]
    changed_line = text.splitlines().index("    total += i * 2") + 1
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        at, before = steps[report["step"]], steps[report["step"] - 1]
        assert at.frames[-1].locals["i"].repr == "3"
        assert (before.lineno, before.frames[-1].locals["i"].repr) == (changed_line, "3")


def test_stop_points_in_traced_runs_are_refused_clearly(tmp_path):
    path, _, _ = _record(tmp_path)
    result = run_cli("replay", str(path), "--trust", "--to", "5", "--pdb")
    assert result.returncode == 2
    assert "--pdb at a step of a traced run is not supported yet" in result.stderr


JSON_PROGRAM = '''\
import json
import snapstate_capture as snap

data = json.loads('{"a": [1, 2, 3]}')
snap.checkpoint("parsed", data=data)
print(json.dumps(data, sort_keys=True))
'''


def test_a_library_snapstate_itself_uses_is_traced_only_where_the_program_calls_it(tmp_path):
    """``--include '*/json/*'``: replay reads its recording with ``json`` under the tracer, and
    a checkpoint's capture may use it too; only the program's two calls are steps, so the
    replay is the recording's (it diverged at step 0 on replay's own ``json.loads``)."""
    program = tmp_path / "uses_json.py"
    program.write_text(JSON_PROGRAM)
    path = tmp_path / "json.snap"
    done = run_cli("record", "-o", str(path), "--trace", "calls", "--include", "*/json/*",
                   str(program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        steps = list(timeline.runs[-1].steps)
    outer = [s.function for s in steps if s.kind == "call" and len(s.frames) == 1]
    assert outer == ["loads", "dumps"], [(s.kind, s.function) for s in steps]
    assert [s.label for s in steps if s.kind == "checkpoint"] == ["parsed"]
    result, data = replay_json(path)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
    assert data["message"] == f"replayed {len(steps)} steps, no divergence", data
