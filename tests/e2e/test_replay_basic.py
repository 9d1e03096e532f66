"""Replay re-runs a recorded agent with every effect served from the journal: no divergence,
no effect executed (the side file that each real effect call appends to stays unchanged), and
stops in pdb or a console at step N with the locals of the recording."""

from __future__ import annotations

import pytest

import snapstate_capture as snap
from tests.conftest import run_cli, run_python
from tests.e2e.replay_helpers import record_agent, recorded_local, replay_json, side_lines


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    return record_agent(tmp_path_factory.mktemp("agent"))


def test_replay_to_the_end_runs_no_effect(agent):
    path, side, _ = agent
    before = side_lines(side)
    assert len(before) == 6 + 6 + 2  # llm and tool each round, flaky twice
    with snap.open_timeline(path) as timeline:
        total = len(timeline.runs[-1].steps)
    result = run_cli("replay", str(path), "--trust")
    assert result.returncode == 0, result.stderr
    assert f"replayed {total} steps, no divergence" in result.stdout
    assert side_lines(side) == before


@pytest.mark.parametrize("to", [0, 11, -1])
def test_replay_to_step_n(agent, to):
    path, side, _ = agent
    before = side_lines(side)
    result, data = replay_json(path, "--to", str(to))
    assert result.returncode == 0, result.stderr
    with snap.open_timeline(path) as timeline:
        count = len(timeline.runs[-1].steps)
    stop = to % count
    assert data["status"] == "ok" and data["replayed"] == stop + 1
    counted = f"{stop + 1} step" + ("s" if stop else "")  # "1 step" at --to 0
    assert data["message"] == f"replayed {counted} (0-{stop}), no divergence"
    assert side_lines(side) == before


def test_pdb_at_step_n_shows_the_recorded_locals(agent):
    path, side, _ = agent
    before = side_lines(side)
    with snap.open_timeline(path) as timeline:
        step = next(s for s in timeline.runs[-1].steps if s.label == "round"
                    and s.extra["i"].repr == "3")
        index = step.index
    expected = recorded_local(path, index, "memory")
    result = run_python("-m", "snapstate_inspect", "replay", str(path), "--trust", "--to",
                        str(index), "--pdb", input="p memory\np total * 1000\nc\n")
    assert result.returncode == 0, result.stderr
    assert f"replay reached step {index}" in result.stdout
    lines = result.stdout.splitlines()
    printed = next(line for line in lines if line.startswith("(Pdb) [{"))
    assert printed.removeprefix("(Pdb) ") == expected
    assert "(Pdb) 12000" in result.stdout  # total = 0+2+4+6 after round 3
    assert "no divergence" in result.stdout
    assert side_lines(side) == before


def test_pdb_quit_at_a_checkpoint_ends_the_replay_there(agent):
    path, _, _ = agent
    with snap.open_timeline(path) as timeline:
        index = next(s.index for s in timeline.runs[-1].steps if s.label == "round")
    result = run_python("-m", "snapstate_inspect", "replay", str(path), "--trust", "--to",
                        str(index), "--pdb", input="q\n")
    assert result.returncode == 0, result.stderr
    assert f"(0-{index}), no divergence; pdb quit there" in result.stdout, result.stdout


def test_console_at_step_n_has_locals_and_globals(agent):
    path, _, _ = agent
    result = run_python("-m", "snapstate_inspect", "replay", str(path), "--trust", "--to", "5",
                        "--console", input="print('seen', i, total, SIDE.endswith('side.txt'))\n")
    assert result.returncode == 0, result.stderr
    i = recorded_local(path, 5, "i")
    total = recorded_local(path, 5, "total")
    assert f"seen {i} {total} True" in result.stdout


@pytest.mark.parametrize("args, problem", [
    ((), "pass --trust"),
    (("--trust", "--pdb"), "--pdb needs --to N"),
    (("--trust", "--to", "999"), "step 999 out of range"),
])
def test_bad_replay_requests_fail_in_one_line(agent, args, problem):
    path, _, _ = agent
    result = run_cli("replay", str(path), *args)
    assert result.returncode == 2
    assert problem in result.stderr and str(path) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_resume_refuses_a_finished_run(agent):
    path, _, _ = agent
    result = run_cli("resume", str(path), "--trust")
    assert result.returncode == 2
    assert "crashed or interrupted run can be resumed" in result.stderr


def test_a_run_signed_with_your_key_replays_without_trust(tmp_path):
    assert run_cli("keygen").returncode == 0
    path, side, _ = record_agent(tmp_path, rounds=2)
    result = run_cli("replay", str(path))
    assert result.returncode == 0, result.stderr
    assert "no divergence" in result.stdout


def test_a_failed_runs_replay_names_the_exception_it_ended_in(tmp_path):
    """A run recorded ending in an exception replayed with nothing of that shown: "replayed
    11 steps, no divergence" for a script whose recording said ZeroDivisionError. The verdict
    of a whole replay names it; one that stops at ``--to N`` before it does not."""
    (tmp_path / "average.py").write_text(
        "def average(values):\n"
        "    total = sum(values)\n"
        "    return total / (len(values) - 3)\n"
        "print(average([2, 4, 6]))\n")
    path = tmp_path / "average.snap"
    recorded = run_cli("record", "-o", str(path), "average.py", cwd=tmp_path)
    assert recorded.returncode == 1 and "ZeroDivisionError" in recorded.stderr
    whole = run_cli("replay", str(path), cwd=tmp_path)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert whole.stdout.strip().endswith(
        "no divergence; the run ends in ZeroDivisionError: division by zero, as recorded"), \
        whole.stdout
    part = run_cli("replay", str(path), "--to", "2", cwd=tmp_path)
    assert part.stdout.strip().endswith("replayed 3 steps (0-2), no divergence"), part.stdout


def test_a_step_of_a_run_without_steps_is_refused_saying_it_has_none(tmp_path):
    path = tmp_path / "empty.snap"
    with snap.record(path):
        pass
    result = run_cli("replay", str(path), "--trust", "--to", "0")
    assert result.returncode == 2
    assert "step 0 out of range (run " in result.stderr
    assert result.stderr.rstrip().endswith("has no steps)"), result.stderr
