"""Steps and effects are matched by lineage (issue 15 point 3): an asyncio agent gathering
effects with random delays, and a tool agent running its tools on a thread pool, interleave
differently at every recording and again on replay (served effects answer at once) — each
replays without divergence, 5 runs in 5, with ``record()`` blocks and traced by ``snapstate
record --trace calls``. A change planted in a copy of the program is reported at the exact
recorded step it first changes, whatever the interleaving."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

import snapstate_capture as snap
from snapstate_inspect.model.values import SUBMITTED_FRAME
from snapstate_capture.replay.journal import Journal
from tests.conftest import PROGRAMS, run_cli, run_python
from tests.e2e.replay_helpers import replay_json

RUNS = 5
#: program -> (the planted change: old source, new source)
PLANTS = {
    "async_gather": ("limit = 2 if plant and number == 2 else 3", "limit = 2 if number == 2 else 3"),
    "pool_tools": ("if PLANT and name == \"lookup\" and argument == 21:",
                   "if name == \"lookup\" and argument == 21:"),
}


def _record(tmp_path, program, n: int, traced: bool):
    path = tmp_path / f"{program.stem}-{n}.snap"
    if traced:
        done = run_cli("record", "--trace", "calls", "-o", str(path), str(program), "-",
                       cwd=tmp_path)
    else:
        done = run_python(str(program), str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return path


def _steps(path):
    with snap.open_timeline(path) as timeline:
        return [(s.index, s.kind, s.label, s.lineage, {k: v.repr for k, v in s.extra.items()})
                for s in timeline.runs[-1].steps]


@pytest.mark.parametrize("name,traced", [("async_gather", False), ("pool_tools", False),
                                         ("async_gather", True)])
def test_concurrent_agents_replay_without_divergence_5_in_5(tmp_path, name, traced):
    program = PROGRAMS / f"{name}.py"
    interleavings = set()
    for n in range(RUNS):
        path = _record(tmp_path, program, n, traced)
        interleavings.add(tuple((lineage, label) for _, kind, label, lineage, _ in _steps(path)
                                if kind in ("effect", "checkpoint")))
        _, data = replay_json(path)
        assert data["status"] == "ok", data["message"]
    assert len(interleavings) > 1  # the recordings really were scheduled differently


def _planted_step(name: str, steps) -> int:
    """The recorded step the planted change first alters, found by what it holds."""
    if name == "async_gather":  # question 2 searches with another limit: its search effect
        lineage = next(lineage for _, kind, label, lineage, extra in steps
                       if label == "searched" and extra["number"] == "2")
        return next(index for index, kind, label, line, _ in steps
                    if line == lineage and kind == "effect" and label == "search")
    return next(index for index, kind, label, _, extra in steps  # the lookup of 21's result
                if label == "tool done" and extra["argument"] == "21")


@pytest.mark.parametrize("name,traced", [("async_gather", False), ("pool_tools", False),
                                         ("async_gather", True)])
def test_a_planted_change_is_reported_at_its_first_step(tmp_path, name, traced):
    program = shutil.copy(PROGRAMS / f"{name}.py", tmp_path / f"{name}.py")
    path = _record(tmp_path, program, 0, traced)
    old, new = PLANTS[name]
    source = program.read_text()
    assert old in source
    program.write_text(source.replace(old, new))
    _, data = replay_json(path, "--allow-drift")
    assert data["status"] == "divergence", data["message"]
    assert data["divergence"]["step"] == _planted_step(name, _steps(path))


@pytest.mark.parametrize("traced", [False, True])
def test_workers_sharing_a_queue_take_what_they_took_when_recorded(tmp_path, traced):
    """Three asyncio workers take URLs from one queue; which takes which depends on which
    fetch (an effect) came back first. Served at once, the first worker's fetch returned
    before the others had taken a URL, it took the next one too, and the replay diverged
    at its second fetch. Served effects now suspend and return in the recorded order."""
    program = PROGRAMS / "async_workers.py"
    path = _record(tmp_path, program, 0, traced)
    with snap.open_timeline(path) as timeline:
        takers = {s.extra["url"].repr: s.extra["worker"].repr
                  for s in timeline.runs[-1].steps if s.label == "fetched"}
    # the fixed delays bring the second worker's fetch back first: it took URL 3
    assert takers["'https://example.org/3'"] == "'w1'", takers
    _, data = replay_json(path)
    assert data["status"] == "ok", data["message"]
    for n in range(1, 4):  # random delays: a schedule of their own at each recording
        path = tmp_path / f"random-{n}.snap"
        assert run_python(str(program), str(path), "random", cwd=tmp_path).returncode == 0
        _, data = replay_json(path)
        assert data["status"] == "ok", data["message"]


@pytest.mark.parametrize("traced", [False, True])
def test_workers_putting_follow_up_jobs_take_what_they_took_when_recorded(tmp_path, traced):
    """Workers that put follow-up jobs on their own queue: which worker takes a job depends
    on whether the next fetch came back in the same pass of the event loop as the one before
    (its worker then resumed ahead of the worker the put woke) or later (behind it). Replay
    released every served call behind: 7 of 20 recordings under load diverged at the worker
    that took the job the other took when recorded. The journal keeps which it was now
    (``capture/loop_passes.py``), and the queue's waiting getters are not compared."""
    for n in range(3):
        path = _record(tmp_path, PROGRAMS / "async_queue_followups.py", n, traced)
        with snap.open_timeline(path) as timeline:
            passes = [Journal(timeline.runs[-1]).entries[i].value.get("t") for i in range(13)]
        assert set(passes) <= {0, 1} and passes[0] == 0  # kept for every async fetch
        _, data = replay_json(path)
        assert data["status"] == "ok", data["message"]


@pytest.mark.parametrize("trace", [None, "lines", "calls"])
def test_tool_calls_raced_with_first_completed_take_the_recorded_rounds(tmp_path, trace):
    """``asyncio.wait(..., return_when=FIRST_COMPLETED)`` wakes its waiter two passes of the
    loop after the first call's task finished; what finished meanwhile is in its round.
    Replay released every later call one pass behind the call before it, so a call recorded
    as coming back later was done by then and joined the round: traced recordings diverged
    4 of 4 (``--trace lines``) and 4 of 4 (``--trace calls``). The journal keeps how many
    passes later each call came back (``"n"``, ``capture/loop_passes.py``)."""
    program = PROGRAMS / "async_first_completed.py"
    counted = set()
    for n in range(3 if trace else 2):
        path = tmp_path / f"race-{n}.snap"
        if trace:
            done = run_cli("record", "--trace", trace, "-o", str(path), str(program), "-",
                           cwd=tmp_path)
        else:
            done = run_python(str(program), str(path), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        with snap.open_timeline(path) as timeline:
            counted |= {entry.value.get("n") for entry in Journal(timeline.runs[-1]).entries}
        _, data = replay_json(path)
        assert data["status"] == "ok", data["message"]
    assert counted & set(range(2, 9))  # some calls came back passes after the one before


@pytest.mark.parametrize("traced", [False, True])
def test_an_async_effect_that_awaits_nothing_does_not_suspend_on_replay(tmp_path, traced):
    """A served call always yielded a pass of the loop first: one recorded as returning
    without suspending its task (a cache hit) let a task woken before it run first on replay
    (helper-38: 3 of 3 recordings, and 8 of 12 of a worker pool with a 40% cache). The journal
    keeps that it did not suspend (``"u"``)."""
    path = _record(tmp_path, PROGRAMS / "async_no_suspend.py", 0, traced)
    with snap.open_timeline(path) as timeline:
        order = [s.extra["seen"].repr for s in timeline.runs[-1].steps if s.label == "order"]
    assert order == ["['p', 'c']"]
    for _ in range(2):
        _, data = replay_json(path)
        assert data["status"] == "ok", data["message"]


@pytest.mark.parametrize("traced", [False, True])
def test_answers_taken_as_they_complete_come_in_the_recorded_order(tmp_path, traced):
    """``asyncio.as_completed`` yields each answer as its call returns: served at once, the
    answers came in the order they were asked in, and the first checkpoint diverged. They
    come back in the recorded order now."""
    path = _record(tmp_path, PROGRAMS / "async_as_completed.py", 0, traced)
    with snap.open_timeline(path) as timeline:
        answers = [s.extra["answer"].repr for s in timeline.runs[-1].steps
                   if s.label == "answer"]
    assert answers[0] == "'weather: done'" and answers[-1] == "'calendar: done'", answers
    _, data = replay_json(path)
    assert data["status"] == "ok", data["message"]


def test_pool_results_taken_as_they_complete_come_in_the_recorded_order(tmp_path):
    """``concurrent.futures.as_completed`` over a thread pool's calls: served at once, the
    calls finished in any order and the first checkpoint took another answer than recorded
    (8 of 8 replays diverged). A served call in a thread other than the main one returns
    once every step recorded before its own was replayed, as the recorded calls came back
    among the main thread's steps (``EffectServing.await_turn``)."""
    program = PROGRAMS / "pool_as_completed.py"
    for n in range(3):
        path = tmp_path / f"pool-{n}.snap"
        done = run_python(str(program), str(path), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        printed = done.stdout.strip().splitlines()[-1]
        assert printed.startswith("['weather ok'"), printed  # not the order of submission
        result, data = replay_json(path)
        assert data["status"] == "ok", data["message"]
        assert printed in result.stdout, result.stdout


def test_traced_pool_results_taken_as_they_complete_come_in_the_recorded_order(tmp_path):
    """The same under ``--trace calls`` (``traced_stop.other_threads_caught_up``): with the calls
    slow enough that the main thread's checkpoints come between their returns, every replay
    diverged at the first checkpoint after the first answer."""
    script = shutil.copy(PROGRAMS / "pool_as_completed.py", tmp_path / "pool_as_completed.py")
    path = tmp_path / "pool.snap"
    done = run_cli("record", "--trace", "calls", "-o", str(path), str(script), "-", "slow",
                   cwd=tmp_path)
    recorded = "['weather ok', 'stocks ok', 'news ok', 'maps ok']"
    assert done.returncode == 0 and recorded in done.stdout, done.stdout + done.stderr
    result, data = replay_json(path)
    assert data["status"] == "ok", data["message"]
    assert recorded in result.stdout, result.stdout


@pytest.mark.parametrize("traced", [False, True])
def test_as_completed_over_bare_coroutines_replays(tmp_path, traced):
    """``asyncio.as_completed(coroutines)`` wraps them in tasks in the order of a set of them
    — their addresses', another in every process — so the tasks' lineages were named
    differently on replay and it diverged at its first effect. While recording and replaying
    they are wrapped in the order the program gave them (``lineage._hook_as_completed``)."""
    program = PROGRAMS / "async_as_completed.py"
    for n in range(3):
        path = tmp_path / f"bare-{n}.snap"
        if traced:
            script = shutil.copy(program, tmp_path / program.name)
            done = run_cli("record", "--trace", "calls", "-o", str(path), str(script), "-",
                           "bare", cwd=tmp_path)
        else:
            done = run_python(str(program), str(path), "bare", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        with snap.open_timeline(path) as timeline:
            asked = {s.lineage: s.extra["args"].repr for s in timeline.runs[-1].steps
                     if s.kind == "effect"}
        # the lineages follow the program's order: main/t0/t0 asked for search, t1 weather
        assert "search" in asked["main/t0/t0"] and "weather" in asked["main/t0/t1"], asked
        _, data = replay_json(path)
        assert data["status"] == "ok", data["message"]


def test_traced_pdb_stops_in_each_pool_call_of_a_round(tmp_path):
    """pdb at each step a worker made in the last round — the call of ``run_tool`` and its
    ``tool done`` checkpoint in each pool call — stops there with every step recorded before
    it compared: the stop waits for the other workers to make theirs (a worker's stop came
    first, and the comparison reported their steps missing: most such stops diverged), and
    a call stop is the call in the step's own lineage (workers call it in any order)."""
    program = shutil.copy(PROGRAMS / "pool_tools.py", tmp_path / "pool_tools.py")
    path = _record(tmp_path, program, 0, True)
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        rounds = [s.index for s in steps if s.kind == "effect" and s.label == "model"]
        stops = [(s.index, s.kind, s.lineage) for s in steps if s.index > rounds[-1]
                 and s.lineage != "main"
                 and (s.kind == "checkpoint" or (s.kind == "call" and s.function == "run_tool"))]
    assert len({lineage for _, _, lineage in stops}) == 5 and len(stops) == 10, stops
    for index, kind, lineage in stops:
        _, data = replay_json(path, "--to", str(index), "--pdb", input="c\n")
        assert data is not None and data["status"] == "ok", (index, kind, lineage, data)


@pytest.mark.parametrize("traced", [False, True])
def test_effects_handed_to_a_pool_replay_where_they_were_submitted(tmp_path, traced):
    """An effect submitted to a thread pool itself runs with no frame of the program's own on
    the worker: its step is sited at the code that submitted it. That frame was read when the
    call returned — recorded, 0.1 s later and lines further on; replayed, at once — so every
    such step diverged at its first effect ("expected line 32, the program is at line 31").
    It is the submitting chain as it was at the submit, without another thread's locals; and
    the pool in ``main``'s locals, which started three workers recorded and fewer replayed, is
    machinery (``values/executors.py``)."""
    program = shutil.copy(PROGRAMS / "pool_submits.py", tmp_path / "pool_submits.py")
    path = _record(tmp_path, program, 0, traced)
    source = program.read_text().splitlines()
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        effects = [s for s in steps if s.kind == "effect"]
        lines = {source[s.frames[-1].lineno - 1].strip() for s in effects}
        assert lines == {"futures.append(pool.submit(slow, k))",
                         "for doubled in pool.map(slow, range(3, 6)):"}, lines
        assert all(not frame.locals for s in effects for frame in s.frames)
        done = next(s for s in steps if s.label == "done")
        assert done.frames[-1].locals["pool"].repr == (
            "<ThreadPoolExecutor max_workers=3 shutdown=True>")
        first = effects[0].index
    shown = run_cli("show", str(path), str(first), cwd=tmp_path)
    assert SUBMITTED_FRAME in shown.stdout, shown.stdout
    _, data = replay_json(path)
    assert data["status"] == "ok", data["message"]


def test_semaphores_and_events_are_compared_by_type(tmp_path):
    """How many tasks wait on a semaphore at a step is the scheduler's: recorded, they piled up
    behind calls that took milliseconds; replayed, served at once. A traced step keeps such a
    primitive bounded (it reaches its event loop), compared by its preview — "[locked,
    waiters:2]" against "waiters:3" — and most replays diverged. Primitives carry their
    identity by type (``identity.live_identity``)."""
    program = shutil.copy(PROGRAMS / "async_limits.py", tmp_path / "async_limits.py")
    for n in range(3):
        path = tmp_path / f"limits-{n}.snap"
        done = run_cli("record", "--trace", "calls", "-o", str(path), str(program),
                       cwd=tmp_path)
        assert done.returncode == 0 and "[0, 1, 4, 9, 16]" in done.stdout, done.stderr
        _, data = replay_json(path)
        assert data["status"] == "ok", data["message"]


def test_other_threads_wait_while_pdb_is_at_a_pool_stop(tmp_path):
    """At a pdb stop in one pool worker, the shared dict shows the stores recorded before the
    stop, no more: the other workers' effects recorded after it were let go as the stop was
    reached, and they went on storing while the user looked (13 of 30 such stops showed
    stores from after the stop). They wait at their next effect until the user goes on."""
    program = shutil.copy(PROGRAMS / "pool_stores.py", tmp_path / "pool_stores.py")
    path = tmp_path / "stores.snap"
    done = run_cli("record", "-o", str(path), str(program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected, stored = {}, []
    with snap.open_timeline(path) as timeline:
        for step in timeline.runs[-1].steps:
            if step.kind == "call" and step.function == "store":
                expected[step.index] = sorted(stored)
            if step.kind == "return" and step.function == "store":
                stored.append(int(step.lineage.rpartition("/p")[2]))
    assert len(expected) == 8, expected
    for index, before in expected.items():
        result, data = replay_json(path, "--to", str(index), "--pdb",
                                   input="p 'STORED', sorted(STORED)\nc\n")
        assert data["status"] == "ok", data["message"]
        assert f"('STORED', {before})" in result.stdout, (index, before, result.stdout)


def test_a_fork_at_a_pool_step_holds_each_step_once(tmp_path):
    """A fork at a step of one pool worker copies its parent's steps up to there; a worker
    behind it made its steps recorded before the fork point only after the stop's own step
    (the stop waits for them), and the fork took those again from the replay: a quarter of
    the forks held steps twice and said "finished". The steps the fork takes from the replay
    begin after the last one recorded before its point (``TracedComparison._late``)."""
    program = shutil.copy(PROGRAMS / "pool_stores.py", tmp_path / "pool_stores.py")
    path = tmp_path / "stores.snap"
    assert run_cli("record", "-o", str(path), str(program), cwd=tmp_path).returncode == 0
    with snap.open_timeline(path) as timeline:
        parent = timeline.runs[-1]
        made = Counter((s.lineage, s.kind, s.function) for s in parent.steps)
        points = [s.index for s in parent.steps if s.kind == "effect"]
    forked = 0
    for index in points:
        copy = shutil.copy(path, tmp_path / f"fork-{index}.snap")
        result, data = replay_json(copy, "--to", str(index), "--live")
        if data["status"] != "ok":  # refused in one line: another worker ran ahead of it
            assert "cannot fork at step" in data["message"], data["message"]
            continue
        forked += 1
        with snap.open_timeline(copy) as timeline:
            fork = Counter((s.lineage, s.kind, s.function) for s in timeline.runs[-1].steps)
        assert not fork - made, (index, fork - made)
    assert forked >= len(points) // 2, forked


class _Session:
    """What ``TracedComparison`` asks of a replay session, recording its divergences."""

    def __init__(self, count: int) -> None:
        from snapstate_capture.replay.relocate import Relocation

        self.count, self.recording_complete, self.diverged = count, True, []
        self.relocation = Relocation("/", "/")

    def diverge(self, report):
        self.diverged.append(report)
        raise SystemExit(1)

    def progress(self, index: int) -> None:
        pass


class _Unreadable:
    """A scratch step whose stack cannot be read the first time (a half-written file)."""

    def __init__(self, step) -> None:
        self._step, self._failed = step, False

    def __getattr__(self, name):
        if name == "frames" and not self._failed:
            self._failed = True
            raise OSError("database is locked")
        return getattr(self._step, name)


def test_a_step_that_fails_to_read_is_compared_again_as_new(tmp_path):
    """The follower fed a whole batch again when one of its steps failed to read, and the
    recorded steps the failed one had taken were gone: the comparison met the scratch run's
    first step again where it expected the main thread's next ("expected a return step, the
    program reached a call step" of ``<module>``: a few pool_tools stops in a hundred under
    load). A failed feed puts back what it took, and the follower counts steps one by one."""
    from snapstate_capture.replay.traced_compare import TracedComparison

    path = _record(tmp_path, shutil.copy(PROGRAMS / "pool_tools.py", tmp_path / "p.py"), 0,
                   True)
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        steps = list(run.steps)
        session = _Session(len(steps))
        comparison = TracedComparison(session, run, str(tmp_path), len(steps))
        effect = next(s for s in steps if s.kind == "effect" and s.lineage != "main")
        for step in steps:
            if step is effect:
                with pytest.raises(OSError):
                    comparison.feed(_Unreadable(step))
            comparison.feed(step)
        assert not session.diverged and comparison.first_left() is None
