"""A traced run (``snapstate record``, always traced) forks live and resumes after SIGKILL: the
replay serves the recorded effects up to the fork point, then the trace stream goes on into a
new run of the same file, numbered on from there, and only the effects after it run (counted in
the program's side file)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import snapstate_capture as snap
from tests.conftest import PROGRAMS, ROOT, run_cli
from tests.e2e.replay_helpers import replay_json, side_lines


def _record(tmp_path, trace="lines"):
    program = shutil.copy(PROGRAMS / "traced_agent.py", tmp_path / "agent.py")
    path, side = tmp_path / "traced.snap", tmp_path / "side.txt"
    done = run_cli("record", "-o", str(path), "--trace", trace, str(program), str(side),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    side.unlink()
    return path, side


def _shape(step):
    """What a step shows: kind, place, and every frame's function, line and scalar locals
    (a function's repr names its address, which differs between processes)."""
    return (step.kind, step.label, step.function, step.lineno, step.depth,
            [(f.function, f.lineno, {k: v.repr for k, v in f.locals.items()
                                     if "0x" not in v.repr}) for f in step.frames])


def _index(path, kind, function, **locals_repr):
    with snap.open_timeline(path) as timeline:
        for step in timeline.runs[0].steps:
            if step.kind == kind and step.function == function and all(
                    step.frames[-1].locals[k].repr == v for k, v in locals_repr.items()):
                return step.index
    raise AssertionError(f"no {kind} step in {function} with {locals_repr}")


def _check_fork(path, index):
    """The fork's first ``index + 1`` steps are the parent's, stored the same; the rest are
    the program's steps made live, which here (effects return what they returned: the random
    state is the recording's) show the parent's too. The file verifies."""
    with snap.open_timeline(path) as timeline:
        parent, fork = timeline.runs[0], timeline.runs[-1]
        assert (fork.parent.run_id, fork.parent.step, fork.status) == (parent.id, index,
                                                                       "finished")
        before, after = list(parent.steps), list(fork.steps)
        assert len(after) == len(before)
        for a, b in zip(before[:index + 1], after[:index + 1]):
            assert [(f.function, f.lineno, {k: v.repr for k, v in f.locals.items()})
                    for f in a.frames] == [(f.function, f.lineno,
                                            {k: v.repr for k, v in f.locals.items()})
                                           for f in b.frames]
        assert [_shape(s) for s in after] == [_shape(s) for s in before]
        journal = [row[1] for row in timeline.engine.effect_rows(fork.id)]
        assert journal == [s.index for s in after if s.kind == "effect"]
    verified = run_cli("verify", str(path))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_live_fork_at_a_traced_call_step_runs_only_the_effects_after_it(tmp_path):
    path, side = _record(tmp_path)
    index = _index(path, "call", "step", i="2")
    result, data = replay_json(path, "--to", str(index), "--live")
    assert result.returncode == 0, result.stdout + result.stderr
    assert data["fork"]["step"] == index and data["fork_status"] == "finished"
    assert side_lines(side) == ["fetch 2", "fetch 3", "fetch 4"]  # 0 and 1 were served
    _check_fork(path, index)
    # the fork is a run like any other: it replays, every effect served
    side.unlink()
    result, data = replay_json(path)
    assert result.returncode == 0 and data["status"] == "ok", result.stdout + result.stderr
    assert side_lines(side) == []


def test_live_fork_at_a_traced_effect_step_and_a_fork_of_the_fork(tmp_path):
    path, side = _record(tmp_path, trace="calls")
    index = _index(path, "effect", "step", i="1")
    result, data = replay_json(path, "--to", str(index), "--live")
    assert result.returncode == 0, result.stdout + result.stderr
    assert side_lines(side) == ["fetch 2", "fetch 3", "fetch 4"]  # fetch 1 is step `index`
    _check_fork(path, index)
    side.unlink()
    with snap.open_timeline(path) as timeline:
        fork = timeline.runs[-1]
        later = [s.index for s in fork.steps if s.kind == "effect"][3]
    result, data = replay_json(path, "--run", fork.id, "--to", str(later), "--live")
    assert result.returncode == 0, result.stdout + result.stderr
    assert side_lines(side) == ["fetch 4"]
    with snap.open_timeline(path) as timeline:
        assert timeline.runs[-1].parent.run_id == fork.id
    assert run_cli("verify", str(path)).returncode == 0


def test_a_traced_live_fork_is_in_the_file_itself_when_replay_ends(tmp_path):
    """The fork's traced steps are written by the replay's writer while ``snapstate replay``
    still reads the parent run: the writer could not fold its WAL into the file, ``-wal``
    and ``-shm`` stayed beside it, and a copy of the file alone had no fork."""
    path, _ = _record(tmp_path, trace="calls")
    index = _index(path, "effect", "step", i="1")
    result, _ = replay_json(path, "--to", str(index), "--live")
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (tmp_path / "traced.snap-wal").exists()
    assert not (tmp_path / "traced.snap-shm").exists()
    alone = tmp_path / "copied" / "traced.snap"
    alone.parent.mkdir()
    shutil.copyfile(path, alone)  # the file alone, as ``cp`` copies it
    with snap.open_timeline(alone) as timeline:
        parent, fork = timeline.runs
        assert fork.parent.run_id == parent.id and len(fork.steps) == len(parent.steps)


def test_live_fork_at_a_traced_line_step_is_refused_naming_its_call(tmp_path):
    path, side = _record(tmp_path)
    call = _index(path, "call", "fetch", n="3")
    line = call + 1
    result = run_cli("replay", str(path), "--trust", "--to", str(line), "--live")
    assert result.returncode == 2
    assert (f"step {line} is a line step of a traced run; a traced replay stops and forks at "
            f"call, checkpoint and effect steps only (the call of fetch: --to {call})"
            ) in result.stderr
    assert side_lines(side) == []
    with snap.open_timeline(path) as timeline:
        assert len(timeline.runs) == 1  # nothing forked


def _kill_during_fetch_3(tmp_path, name="traced_crash_agent.py", noted="fetch 3"):
    """Record ``traced_crash_agent.py`` (or ``name``) under ``snapstate record`` and SIGKILL it
    while fetch 3 (the effect that notes ``noted``) is in flight; returns ``(file, side file,
    program)``."""
    program = shutil.copy(PROGRAMS / name, tmp_path / "agent.py")
    path, side = tmp_path / "killed.snap", tmp_path / "side.txt"
    slow = tmp_path / "side.txt.slow"
    slow.touch()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "snapstate_inspect", "record", "-o",
                              str(path), str(program), str(side)], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while noted not in side_lines(side) and time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        time.sleep(0.05)
    time.sleep(0.3)  # the traced steps of the call in flight reach the writer process
    child.send_signal(signal.SIGKILL)
    child.communicate()
    slow.unlink()
    return path, side, program


def test_resume_of_a_traced_run_killed_mid_effect_reruns_only_the_effect_in_flight(tmp_path):
    path, side, program = _kill_during_fetch_3(tmp_path)
    assert side_lines(side) == ["fetch 0", "fetch 1", "fetch 2", "fetch 3"]
    with snap.open_timeline(path) as timeline:
        crashed = timeline.runs[0]
        assert crashed.status == "crashed"
        last_effect = [s.index for s in crashed.steps if s.kind == "effect"][-1]
    side.unlink()
    result = run_cli("resume", str(path), "--trust", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert side_lines(side) == ["fetch 3", "fetch 4"]  # in flight, then what came after
    assert not path.with_name(path.name + "-wal").exists()  # the continuation is in the file
    # the continuation is the run an uninterrupted recording makes, step by step
    whole = tmp_path / "whole.snap"
    done = run_cli("record", "-o", str(whole), str(program), str(side), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == result.stdout.splitlines(keepends=True)[0]  # "total N"
    with snap.open_timeline(path) as timeline, snap.open_timeline(whole) as reference:
        continued = timeline.runs[-1]
        assert continued.status == "finished" and continued.continues == crashed.id
        assert (continued.parent.run_id, continued.parent.step) == (crashed.id, last_effect)
        expected = [_shape(s) for s in reference.runs[0].steps]
        got = [_shape(s) for s in continued.steps]
        assert [s for s in got if s[0] != "checkpoint"] == [
            s for s in expected if s[0] != "checkpoint"]
    verified = run_cli("verify", str(path))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    again = run_cli("resume", str(path), "--trust", "--run", crashed.id, cwd=tmp_path)
    assert again.returncode == 2 and "already continued" in again.stderr


def _by_lineage(run):
    """Each lineage's steps (kind, function, line, label), in order; the suspensions of
    coroutines at an ``await`` left out (whether one suspends is timing)."""
    lanes: dict = {}
    for step in run.steps:
        if step.kind != "return" or step.label != "yield":
            lanes.setdefault(step.lineage, []).append(
                (step.kind, step.function, step.lineno, step.label))
    return lanes


def test_resume_takes_the_steps_another_task_made_before_the_resume_point(tmp_path):
    """A traced run of asyncio tasks killed while one is inside an effect resumes at its last
    effect step; on replay another task reaches its effect, recorded after that step, first.
    The continuation holds those steps (its fork point moves past them) and runs only the
    effect in flight; a user's fork at that step is refused, naming the step made ahead."""
    path, side, program = _kill_during_fetch_3(tmp_path, "traced_crash_tasks.py",
                                               noted="forecast Oslo")
    assert side_lines(side) == ["notes roses", "forecast Oslo"]
    with snap.open_timeline(path) as timeline:
        crashed = timeline.runs[0]
        last_effect = [s.index for s in crashed.steps if s.kind == "effect"][-1]
        assert [s.index for s in crashed.steps if s.function == "forecast"][0] > last_effect
    side.unlink()
    forked = run_cli("replay", str(path), "--to", str(last_effect), "--live", "--trust",
                     cwd=tmp_path)
    assert forked.returncode == 2, forked.stdout + forked.stderr
    assert f"cannot fork at step {last_effect}: the replay made step" in forked.stderr
    assert side_lines(side) == []  # the effect in flight waits for the fork: it never ran
    result = run_cli("resume", str(path), "--trust", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert side_lines(side) == ["forecast Oslo"]  # only the effect in flight ran
    whole = tmp_path / "whole.snap"
    done = run_cli("record", "-o", str(whole), str(program), str(side), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == result.stdout.splitlines(keepends=True)[0]
    with snap.open_timeline(path) as timeline, snap.open_timeline(whole) as reference:
        continued = timeline.runs[-1]
        assert continued.status == "finished" and continued.continues == crashed.id
        assert continued.parent.step > last_effect  # past the steps made ahead of it
        assert _by_lineage(continued) == _by_lineage(reference.runs[0])
    verified = run_cli("verify", str(path))
    assert verified.returncode == 0, verified.stdout + verified.stderr
