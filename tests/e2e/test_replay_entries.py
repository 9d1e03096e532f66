"""Every kind of run entry starts again on replay: a script (the other replay tests), a module
run with ``-m`` and its argv, and an importable workflow function with its pickled arguments."""

from __future__ import annotations

import snapstate_capture as snap
from tests.conftest import ROOT, run_cli, run_python
from tests.e2e.replay_helpers import replay_json, side_lines

CALL = ("from tests.programs.workflow import research; import sys; "
        "print(research(sys.argv[1], ['soil', 'roofs'], depth=1))")


def test_function_entry_replays_with_its_arguments(tmp_path):
    path, side = tmp_path / "wf.snap", tmp_path / "side.txt"
    done = run_python("-c", CALL, str(side), cwd=ROOT, env={"WORKFLOW_SNAP": str(path)})
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        entry = run.entry
        assert (entry["kind"], entry["module"], entry["qualname"]) == (
            "function", "tests.programs.workflow", "research")
        args, kwargs = snap.Value(timeline, "arguments", entry["args"]).load(trust=True)
        assert (args, kwargs) == ((str(side), ["soil", "roofs"]), {"depth": 1})
        count = len(run.steps)
    before = side_lines(side)
    result, data = replay_json(path)
    assert result.returncode == 0, result.stderr
    assert data["status"] == "ok" and data["replayed"] == count
    assert side_lines(side) == before == ["search soil", "search roofs"]


def test_module_entry_replays_with_its_argv(tmp_path):
    path, side = tmp_path / "mod.snap", tmp_path / "side.txt"
    done = run_python("-m", "tests.programs.workflow", str(side), "2", cwd=ROOT,
                      env={"WORKFLOW_SNAP": str(path)})
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        entry = timeline.runs[-1].entry
        assert (entry["kind"], entry["module"], entry["argv"]) == (
            "module", "tests.programs.workflow", [str(side), "2"])
    before = side_lines(side)
    result, data = replay_json(path, "--to", "4")
    assert result.returncode == 0, result.stderr
    assert data["replayed"] == 5
    assert side_lines(side) == before


def test_a_run_without_a_replayable_entry_is_refused(tmp_path):
    path = tmp_path / "c.snap"
    done = run_python("-c", "import sys, snapstate_capture as snap\n"
                            "with snap.record(sys.argv[1]):\n"
                            "    snap.checkpoint('x')\n", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result, data = replay_json(path)
    assert result.returncode == 2
    assert "no replayable entry" in result.stderr


ENVIRON_READER = '''\
import os


def main():
    seen = os.environ.get("PYTHONPATH")
    return seen


main()
'''


def test_the_program_sees_the_pythonpath_it_was_recorded_with(tmp_path):
    """The replay child's own PYTHONPATH starts with this snapstate's folder; the program's
    ``os.environ`` has the recorded one (rich's Console keeps ``os.environ``: a traced replay
    diverged on the extra entry)."""
    (tmp_path / "reader.py").write_text(ENVIRON_READER)
    path = tmp_path / "reader.snap"
    done = run_cli("record", "--trace", "calls", "--include", "*/reader.py", "-o", str(path),
                   "reader.py", cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        recorded = timeline.runs[-1].entry["env"]["PYTHONPATH"]
    assert recorded.endswith(str(tmp_path)) and recorded != str(ROOT)
    result, data = replay_json(path)
    assert data is not None, result.stderr
    assert data["status"] == "ok", data.get("message")


EXITS_WITH_A_MESSAGE = """\
import sys

def check(text):
    if not text.strip().startswith("{"):
        sys.exit(f"not JSON: {text.strip()!r}")
    return text

check(sys.stdin.read())
"""


def test_a_replay_writes_the_programs_exit_message_as_python_did(tmp_path):
    """``sys.exit("message")`` writes the message to stderr when the interpreter exits; the
    replay ended first and the program's line was missing from its output (found on
    ``python -m json.tool`` with broken input). Traced by lines and by calls."""
    program = tmp_path / "check.py"
    program.write_text(EXITS_WITH_A_MESSAGE)
    plain = run_python(str(program), input="oops\n", cwd=tmp_path)
    assert plain.returncode == 1 and plain.stderr == "not JSON: 'oops'\n"
    for trace in ("lines", "calls"):
        path = tmp_path / f"{trace}.snap"
        recorded = run_cli("record", "--trace", trace, "-o", str(path), str(program),
                           input="oops\n", cwd=tmp_path)
        assert recorded.returncode == 1 and "not JSON: 'oops'" in recorded.stderr
        replayed = run_cli("replay", str(path), input="oops\n", cwd=tmp_path)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "no divergence; the run ends in SystemExit" in replayed.stdout
        assert replayed.stderr.splitlines().count("not JSON: 'oops'") == 1, replayed.stderr
