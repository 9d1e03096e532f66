"""A traced concurrent asyncio run stops and forks at its steps in mid-run, as a single-task
run does: three workers sharing a queue (``async_workers.py``) and answers taken as they
complete (``async_as_completed.py``), recorded with ``--trace calls`` and ``--trace lines``.

At a step in mid-run the other tasks are inside effects: called before the step, recorded as
returning after it (or, as tasks interleave on replay, not returned yet). Replay serves those
effects and never runs their bodies, and a stop there was refused ("inside effect 'fetch'",
naming another task's effect) or diverged ("ended-early") at nearly every step. Now a fork at
a sample of mid-run steps goes live and the fork replays without divergence; a refusal is left
only for a step of an effect's own body in its own task, and names the steps that work."""

from __future__ import annotations

import re
import shutil

import pytest

import snapstate_capture as snap
from tests.conftest import PROGRAMS, run_cli
from tests.e2e.replay_helpers import replay_json

#: Stop points sampled per recording (evenly, among the mid-run ones).
SAMPLE = 6
#: A fork the replay reached after another task had made a step recorded after it.
AHEAD = re.compile(r"^snapstate: .*: cannot fork at step (\d+): the replay made step (\d+) "
                   r"\(.*\), recorded after it, before reaching it \(its tasks ran in another "
                   r"order here\), and the fork would not hold it; fork at step \2 or later, or "
                   r"before step \1$")
REFUSAL = re.compile(r"^snapstate: .*: step (\d+) is inside effect '\w+' \(step (\d+)\): replay "
                     r"serves the effect's recorded result without running its body, so it "
                     r"cannot (fork|stop) there; \3 at the effect \(--to \2\) or at a step "
                     r"before its call \(--to (\d+)\)$")


def _record(tmp_path, program: str, trace: str):
    """Record ``program`` traced (copied into ``tmp_path``: the traced code is the working
    directory's); returns the path and each step's (index, kind, lineage)."""
    script = shutil.copy(PROGRAMS / f"{program}.py", tmp_path / f"{program}.py")
    path = tmp_path / f"{program}-{trace}.snap"
    done = run_cli("record", "--trace", trace, "-o", str(path), str(script), "-", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        steps = [(s.index, s.kind, s.lineage) for s in timeline.runs[0].steps.summaries(
            0, len(timeline.runs[0].steps))]
    return path, steps


def _mid_run_stops(steps) -> list[int]:
    """The stop points (call, checkpoint and effect steps) between the run's first and last
    effect step, sampled evenly."""
    effects = [index for index, kind, _ in steps if kind == "effect"]
    points = [index for index, kind, _ in steps
              if kind in ("call", "checkpoint", "effect") and effects[0] <= index < effects[-1]]
    stride = max(1, len(points) // SAMPLE)
    return points[::stride][:SAMPLE]


def _check_refusal(stderr: str, index: int, steps) -> None:
    """A refusal is one line, for a step of an effect's body in the effect's own task (an
    effect recorded after it in the same lineage), naming the stops that work there — or,
    should a task run ahead of the fork point on replay (timing), naming the step it made."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    ahead = AHEAD.match(lines[0])
    if ahead is not None:  # timing: rare, but then said so rather than forked without it
        assert int(ahead.group(1)) == index < int(ahead.group(2))
        return
    found = REFUSAL.match(lines[0])
    assert found is not None, stderr
    stop, effect, before = int(found.group(1)), int(found.group(2)), int(found.group(4))
    assert stop == index < effect
    assert steps[effect][1] == "effect" and steps[effect][2] == steps[index][2], steps[effect]
    assert before < index and steps[before][1] in ("call", "checkpoint", "effect")


def _check_fork(path, index: int) -> str:
    """The fork goes on live to the program's end; its journal holds each of its effect steps
    once; it replays without divergence. Returns the fork's run id."""
    with snap.open_timeline(path) as timeline:
        parent, fork = timeline.runs[0], timeline.runs[-1]
        assert (fork.parent.run_id, fork.parent.step, fork.status) == (parent.id, index,
                                                                       "finished")
        effects = [s.index for s in fork.steps if s.kind == "effect"]
        journal = [row[1] for row in timeline.engine.effect_rows(fork.id)]
        assert journal == effects
        assert sum(s.kind == "checkpoint" for s in fork.steps) == sum(
            s.kind == "checkpoint" for s in parent.steps)
        fork_id = fork.id
    result, data = replay_json(path, "--run", fork_id)
    assert data is not None, result.stderr
    assert data["status"] == "ok", data["message"]
    return fork_id


@pytest.mark.parametrize("program", ["async_workers", "async_as_completed"])
@pytest.mark.parametrize("trace", ["calls", "lines"])
def test_a_traced_concurrent_run_forks_live_at_mid_run_steps(tmp_path, program, trace):
    path, steps = _record(tmp_path, program, trace)
    original = path.read_bytes()
    forked = 0
    for index in _mid_run_stops(steps):
        path.write_bytes(original)  # each fork from the recording alone
        for extra in (path.parent / (path.name + "-wal"), path.parent / (path.name + "-shm")):
            extra.unlink(missing_ok=True)
        done = run_cli("replay", str(path), "--to", str(index), "--live", cwd=tmp_path)
        if done.returncode == 2:
            _check_refusal(done.stderr, index, steps)
            continue
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"replayed {index + 1} steps, then continued live as fork" in done.stdout
        _check_fork(path, index)
        forked += 1
    assert forked >= SAMPLE // 2


@pytest.mark.parametrize("program", ["async_workers", "async_as_completed"])
def test_a_traced_concurrent_run_stops_in_pdb_at_its_checkpoints(tmp_path, program):
    """pdb at checkpoints in mid-run, while other tasks' effects are in flight:
    every step before it compared, no divergence, then the program runs on to its end."""
    path, steps = _record(tmp_path, program, "calls")
    checkpoints = [index for index, kind, _ in steps if kind == "checkpoint"]
    for index in checkpoints[1:-1:2]:
        done = run_cli("replay", str(path), "--to", str(index), "--pdb", cwd=tmp_path,
                       input="c\n")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"replayed {index + 1} steps (0-{index}), no divergence" in done.stdout


def test_a_stop_inside_a_task_that_is_an_effect_names_the_spawning_task(tmp_path):
    """``asyncio.create_task(ask(tool))``: the task's coroutine is the effect, so its first
    step is in the effect's body; the refusal names the effect's step and a stop of the task
    that created it."""
    path, steps = _record(tmp_path, "async_as_completed", "calls")
    first = next(index for index, kind, lineage in steps
                 if kind == "call" and lineage.count("/") == 2)
    done = run_cli("replay", str(path), "--to", str(first), "--live", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    found = REFUSAL.match(done.stderr.strip())
    assert found is not None, done.stderr
    before = int(found.group(4))
    assert steps[before][2] == steps[first][2].rpartition("/")[0]
