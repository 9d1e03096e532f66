"""A long replay stops at its first divergence without running the rest of the program (issue
15 point 6): a change planted at round 5 ends the replay there — at once for checkpoints,
within a moment for a traced run (compared while it is written) — and the program prints far
fewer of its rounds than it has."""

from __future__ import annotations

import shutil

import pytest

import snapstate_capture as snap
from tests.conftest import PROGRAMS, run_cli, run_python
from tests.e2e.replay_helpers import replay_json

@pytest.mark.parametrize("traced,rounds", [(False, 300), (True, 1500)],
                         ids=["checkpoints", "traced"])
def test_replay_stops_at_the_first_divergence(tmp_path, traced, rounds):
    program = shutil.copy(PROGRAMS / "long_loop.py", tmp_path / "long_loop.py")
    path = tmp_path / "long.snap"
    if traced:
        done = run_cli("record", "--trace", "calls", "-o", str(path), str(program), "-",
                       str(rounds), cwd=tmp_path, timeout=120)
    else:
        done = run_python(str(program), str(path), str(rounds), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == str(rounds - 1)
    with snap.open_timeline(path) as timeline:
        steps = list(timeline.runs[-1].steps)
        planted = next(s.index for s in steps if s.label == "round" and s.extra["i"].repr == "5")
    source = program.read_text()
    program.write_text(source.replace("value = i * 2\n", "value = i * 2 + (i == 5)\n"))
    result, data = replay_json(path, "--allow-drift")
    assert data["status"] == "divergence", data["message"]
    report = data["divergence"]
    # the first step that holds the changed value: the return of work(5) when traced
    first = planted if not traced else next(
        s.index for s in steps if s.kind == "return" and s.function == "work"
        and s.extra["return"].repr == "10")
    assert report["step"] == first
    rounds_run = [line for line in result.stdout.splitlines() if line.isdigit()]
    assert len(rounds_run) < rounds // 3  # the rest of the program never ran
