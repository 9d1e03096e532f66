"""Forks: ``--to N --live`` continues a replay live as a new run in the same file (parent
(run, N)); ``snapstate resume`` continues a run killed with SIGKILL from its last step."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import snapstate_capture as snap
from tests.conftest import PROGRAMS, ROOT, record_traced_script, run_cli
from tests.e2e.replay_helpers import record_agent, replay_json, runs_json, side_lines


def test_live_fork_appears_in_ls_and_runs_only_later_effects(tmp_path):
    path, side, _ = record_agent(tmp_path, rounds=5)
    before = side_lines(side)
    with snap.open_timeline(path) as timeline:
        parent = timeline.runs[-1]
        count = len(parent.steps)
        fork_at = 8
        later_effects = [s for s in parent.steps[fork_at + 1:] if s.kind == "effect"]
        parent_id = parent.id
    result, data = replay_json(path, "--to", str(fork_at), "--live")
    assert result.returncode == 0, result.stderr
    assert data["fork"]["parent"] == parent_id and data["fork"]["step"] == fork_at
    runs = runs_json(path)
    assert len(runs) == 2
    fork = runs[1]
    assert fork["id"] == data["fork"]["run"]
    assert fork["parent"] == {"run": parent_id, "step": fork_at}
    assert fork["status"] == "finished"
    assert fork["steps"] == count
    # only the effects after the fork point ran for real, each once
    new = side_lines(side)[len(before):]
    assert len(new) == len(later_effects) > 0
    assert new == [line for line in before if line.split()[0] in ("llm", "tool", "flaky")
                   ][-len(new):]
    with snap.open_timeline(path) as timeline:
        original, forked = timeline.runs
        for index in range(fork_at + 1):
            assert original.steps[index].frame_keys == forked.steps[index].frame_keys
        assert forked.steps[-1].extra["result"].repr == original.steps[-1].extra["result"].repr
    # the text table shows the fork with its parent
    table = run_cli("ls", str(path))
    assert f"{parent_id[:8]}@{fork_at}" in table.stdout
    # a fork is a complete run: it replays on its own without running anything
    before_replay = side_lines(side)
    result, data = replay_json(path, "--run", fork["id"][:10])
    assert result.returncode == 0, result.stderr
    assert data["status"] == "ok" and data["replayed"] == count
    assert side_lines(side) == before_replay


def test_resume_a_run_killed_with_sigkill(tmp_path):
    path, side = tmp_path / "agent.snap", tmp_path / "side.txt"
    rounds = 8
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, str(PROGRAMS / "replay_agent.py"), str(path), str(side), str(rounds),
         "--slow"], stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    assert child.stdout is not None
    seen = [child.stdout.readline() for _ in range(3)]  # three rounds completed
    assert all(line.strip().isdigit() for line in seen)
    child.send_signal(signal.SIGKILL)  # lands in the sleep after round 2's checkpoint
    child.wait()
    with snap.open_timeline(path) as timeline:
        crashed = timeline.runs[-1]
        assert crashed.status == "crashed"
        last = len(crashed.steps) - 1
        crashed_id = crashed.id
    assert last >= int(seen[-1])
    result = run_cli("resume", str(path), "--trust")
    assert result.returncode == 0, result.stderr
    assert f"run {crashed_id[:8]} continued as " in result.stdout
    runs = runs_json(path)
    fork = runs[-1]
    assert fork["parent"] == {"run": crashed_id, "step": last}
    assert fork["status"] == "finished"
    with snap.open_timeline(path) as timeline:
        done = timeline.runs[-1].steps[-1]
        assert done.label == "done"
        assert done.extra["result"].repr == str(sum(i * 2 for i in range(rounds)))
    lines = side_lines(side)
    for i in range(rounds):  # every effect ran exactly once across the crash and the resume
        assert lines.count(f"llm question {i}") == 1
        assert lines.count(f"tool q{i}") == 1


FORKED = '''\
def make():
    class Local:  # pickle refuses an instance of a local class: dill takes it
        pass
    return Local()


def square(n):
    return n * n


def total(values, thing):
    return sum(square(v) for v in values)


print(total(range(5), make()))
'''


def _diff_with_a_live_fork_at_total(tmp_path, name: str, source: str):
    """Record ``source`` traced, fork it live at its call of ``total``, and return
    ``snapstate diff`` of the run and its fork (a completed process)."""
    path = record_traced_script(tmp_path, name, source)
    with snap.open_timeline(path) as timeline:
        parent = timeline.runs[-1]
        call = next(s.index for s in parent.steps if s.kind == "call" and s.function == "total")
        parent_id = parent.id
    forked = run_cli("replay", str(path), "--to", str(call), "--live", cwd=tmp_path, timeout=120)
    assert forked.returncode == 0, forked.stdout + forked.stderr
    with snap.open_timeline(path) as timeline:
        fork_id = timeline.runs[-1].id
    assert fork_id != parent_id
    return run_cli("diff", str(path), "--run", parent_id, str(path), "--run", fork_id)


def test_a_fork_is_started_with_what_its_run_was(tmp_path):
    """A run whose program never imports dill, and its live fork: SnapState imported dill for
    the local class's instance after the run had started, the replay child before the fork
    did, and ``snapstate diff`` listed ``package dill: (none) → 0.4.1`` as an input the two
    runs differed in (SnapState's own packages are recorded whether loaded or not)."""
    diff = _diff_with_a_live_fork_at_total(tmp_path, "forked.py", FORKED)
    assert "started with" not in diff.stdout, diff.stdout
    assert diff.returncode == 0, diff.stdout + diff.stderr


IMPORTS_LATER = '''\
def total(values):
    return int(values.sum())


def main():
    import numpy

    return total(numpy.arange(4))


print(main())
'''


def test_a_fork_lists_the_packages_its_run_was_started_with(tmp_path):
    """numpy, imported by the program after its run started, was loaded when the fork
    started: ``snapstate diff`` of the run and its fork listed ``package numpy: (none) → …``
    as an input the two runs differed in."""
    diff = _diff_with_a_live_fork_at_total(tmp_path, "later.py", IMPORTS_LATER)
    with snap.open_timeline(tmp_path / "later.snap") as timeline:
        assert "numpy" not in timeline.runs[0].env["packages"]
    assert "package numpy" not in diff.stdout, diff.stdout
    assert diff.returncode == 0, diff.stdout + diff.stderr
