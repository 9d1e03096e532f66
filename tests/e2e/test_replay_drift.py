"""Code drift: a changed source file is listed (with a diff) before replay and stops it unless
``--allow-drift``; replaying the changed program then diverges exactly at the first step the
change affects, with the differing variables, or at the effect whose arguments changed."""

from __future__ import annotations

import snapstate_capture as snap
from tests.conftest import run_cli
from tests.e2e.replay_helpers import record_agent, replay_json, side_lines


def _edit(program, old, new):
    text = program.read_text()
    assert old in text
    program.write_text(text.replace(old, new))


def _round_step(path, i):
    with snap.open_timeline(path) as timeline:
        return next(s.index for s in timeline.runs[-1].steps
                    if s.label == "round" and s.extra["i"].repr == str(i))


def test_drift_is_listed_and_stops_replay(tmp_path):
    path, side, program = record_agent(tmp_path, rounds=4, copy=True)
    _edit(program, "total += i * 2", "total += i * 3")
    result = run_cli("replay", str(path), "--trust")
    assert result.returncode == 2
    assert "code changed since the recording (1 file(s)); pass --allow-drift" in result.stderr
    assert str(program) in result.stdout
    assert "-        total += i * 2" in result.stdout
    assert "+        total += i * 3" in result.stdout


def test_drift_of_a_traced_run_that_finished_is_listed(tmp_path):
    """A traced run keeps its frames in trace chunks: their files are checked too (a run with
    no checkpoint and no exception step had no file to check, and replay ran the edited code
    until it diverged)."""
    program = tmp_path / "plus.py"
    program.write_text("def f(x):\n    return x + 1\nprint(f(1))\n")
    path = tmp_path / "plus.snap"
    assert run_cli("record", "-o", str(path), str(program), cwd=tmp_path).returncode == 0
    assert run_cli("replay", str(path), cwd=tmp_path).returncode == 0
    _edit(program, "x + 1", "x + 2")
    result = run_cli("replay", str(path), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "code changed since the recording (1 file(s))" in result.stderr
    assert "+    return x + 2" in result.stdout


def test_an_empty_file_that_gains_code_is_drift(tmp_path):
    """An empty ``__init__.py`` has the text "" (it was taken as unreadable, so code added to
    it later ran on replay unnoticed)."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "main.py").write_text("import mypkg\nprint('ok')\n")
    path = tmp_path / "pkg.snap"
    assert run_cli("record", "-o", str(path), "main.py", cwd=tmp_path).returncode == 0
    assert run_cli("replay", str(path), cwd=tmp_path).returncode == 0
    (tmp_path / "mypkg" / "__init__.py").write_text("print('init side effect')\n")
    result = run_cli("replay", str(path), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "+print('init side effect')" in result.stdout  # listed in the diff, not run:
    assert "init side effect\n" not in result.stdout.replace("+print('init side effect')", "")


def test_injected_change_diverges_at_the_first_affected_step(tmp_path):
    path, side, program = record_agent(tmp_path, rounds=6, copy=True)
    before = side_lines(side)
    _edit(program, "draw = random.randint(0, 10 ** 6)",
          "draw = random.randint(0, 10 ** 6) if i != 4 else -1")
    result, data = replay_json(path, "--allow-drift")
    assert result.returncode == 1, result.stderr
    report = data["divergence"]
    assert report["step"] == _round_step(path, 4)
    assert report["reason"] == "value"
    by_name = {v["name"]: v for v in report["variables"]}
    assert by_name["draw"]["actual"] == "-1"
    assert by_name["draw"]["expected"] != "-1"
    assert "memory" in by_name
    assert any(path.startswith("[") and act.endswith("-1}") or "'draw'" in path
               for path, exp, act in by_name["memory"]["diff"])
    assert [d["filename"] for d in data["drift"]] == [str(program)]
    assert side_lines(side) == before  # nothing before the divergence ran for real


def test_changed_effect_arguments_diverge_at_that_call(tmp_path):
    path, side, program = record_agent(tmp_path, rounds=4, copy=True)
    before = side_lines(side)
    _edit(program, 'reply = llm(f"question {i}", temperature=0.5)',
          'reply = llm(f"question {i}" if i != 2 else "other", temperature=0.5)')
    result = run_cli("replay", str(path), "--trust", "--allow-drift")
    assert result.returncode == 1
    assert "effect llm at main agent.py:" in result.stdout
    assert "called with different arguments" in result.stdout
    assert "argument ['prompt']: expected 'question 2', actual 'other'" in result.stdout
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        first_llm_of_round_2 = [s.index for s in steps if s.label == "llm"][2]
    assert f"divergence at step {first_llm_of_round_2}:" in result.stdout
    assert side_lines(side) == before
