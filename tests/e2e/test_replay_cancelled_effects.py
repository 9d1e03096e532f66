"""``async`` effects cancelled from outside (``capture/cancelled_effects.py``): a timeout of
``asyncio.wait_for`` or ``asyncio.timeout`` around a model call, and a task another task
cancels. Served as their recorded ``CancelledError`` at once, the timeouts never turned into
``TimeoutError`` (the replay took another path, or died of the ``CancelledError``) and
``cancel()`` found the task done and returned False. A served call recorded as cancelled
waits until the program cancels it again."""

from __future__ import annotations

import shutil

import pytest

import snapstate_capture as snap
from snapstate_capture.replay.journal import Journal
from tests.conftest import PROGRAMS, run_cli, run_python
from tests.e2e.replay_helpers import replay_json

RECORDED = ("['timed out', 'answer to quick', 'tool timed out', 'cancel() returned True', "
            "'cancelled']")


def _record(program, path, traced: bool, *args: str):
    """Record test program ``program`` (a copy in the test's directory) into ``path``: under
    ``snapstate record --trace calls`` (``traced``) or in its own ``record`` block."""
    if traced:
        return run_cli("record", "--trace", "calls", "-o", str(path), str(program), "-", *args,
                       cwd=path.parent)
    return run_python(str(program), str(path), *args, cwd=path.parent)


@pytest.mark.parametrize("traced", [False, True])
def test_effects_cancelled_by_the_program_are_cancelled_again_on_replay(tmp_path, traced):
    program = shutil.copy(PROGRAMS / "async_timeouts.py", tmp_path / "async_timeouts.py")
    path = tmp_path / "timeouts.snap"
    done = _record(program, path, traced)
    assert done.returncode == 0 and RECORDED in done.stdout, done.stdout + done.stderr
    with snap.open_timeline(path) as timeline:
        cancelled = [e for e in Journal(timeline.runs[-1]).entries if e.outcome == "raise"]
    assert len(cancelled) == 3, cancelled
    assert all(0 < e.value["c"] < 1.0 for e in cancelled), [e.value for e in cancelled]
    result, data = replay_json(path)
    assert data["status"] == "ok", data["message"]
    assert RECORDED in result.stdout, result.stdout  # the program's own output, replayed


@pytest.mark.parametrize("traced", [False, True])
def test_effects_cancelled_by_anyio_timeouts_replay(tmp_path, traced):
    """anyio's cancellation names its cancel scope by address, without ``0x``
    (``Cancelled via cancel scope 7ffff4a4d620; reason: deadline exceeded``): the effect's
    recorded ``CancelledError`` and the program's own on replay differ in it, and every anyio
    timeout around an effect diverged there (helper-33: 3 of 3). The address is blanked
    (``addresses.ADDRESS_PHRASES``)."""
    program = shutil.copy(PROGRAMS / "anyio_timeouts.py", tmp_path / "anyio_timeouts.py")
    path = tmp_path / "anyio.snap"
    done = _record(program, path, traced)
    recorded = "['moved on: True', 'tool timed out', 'answer to quick']"
    assert done.returncode == 0 and recorded in done.stdout, done.stdout + done.stderr
    with snap.open_timeline(path) as timeline:
        cancelled = [e for e in Journal(timeline.runs[-1]).entries if e.outcome == "raise"]
    assert len(cancelled) == 2, cancelled
    result, data = replay_json(path)
    assert data["status"] == "ok", data["message"]
    assert recorded in result.stdout, result.stdout


def test_a_deadline_that_fired_while_the_call_went_on_fires_again_on_replay(tmp_path):
    """``asyncio.wait_for(asyncio.shield(call), 0.05)`` and ``asyncio.wait({task},
    timeout=0.05)`` around a 0.3 s call: recorded, the deadline fired and the call went on.
    Served at once, the call was done before the deadline, which never fired: the replay took
    the other path (helper-33: 8 of 8). A served call now returns once every step recorded
    before its own was replayed — the checkpoint the program made when its deadline fired."""
    program = shutil.copy(PROGRAMS / "async_shielded.py", tmp_path / "async_shielded.py")
    path = tmp_path / "shielded.snap"
    done = run_python(str(program), str(path), cwd=tmp_path)
    recorded = "['still waiting', 'answer to slow', 'done 0, pending 1', 'answer to tool']"
    assert done.returncode == 0 and recorded in done.stdout, done.stdout + done.stderr
    result, data = replay_json(path)
    assert data["status"] == "ok", data["message"]
    assert recorded in result.stdout, result.stdout


@pytest.mark.parametrize("traced", [False, True])
def test_a_task_group_whose_task_failed_replays_its_other_calls_returning(tmp_path, traced):
    """A ``TaskGroup`` whose tasks' calls came back in one turn of the event loop, the failing
    task's first: recorded, every other call returned before the group cancelled its task. On
    replay each served call waits for its turn, released one by one through the loop; the
    group's cancellation (one hop after the failing task's return) came before the others'
    release (two hops): they came back cancelled, and every call ordered after them waited
    ``TURN_WAIT`` (helper-34: deterministic here, 9 of 20 with random latencies under
    ``--trace``, ~11 s each). A cancellation that comes while a call waits for its turn waits
    for the turn too (``cancelled_effects.in_turn``)."""
    program = shutil.copy(PROGRAMS / "taskgroup_failure.py", tmp_path / "taskgroup_failure.py")
    for n, schedule in enumerate(["fixed", "random", "random"]):
        path = tmp_path / f"group-{n}.snap"
        extra = ["random"] if schedule == "random" else []
        done = _record(program, path, traced, *extra)
        assert done.returncode == 0, done.stdout + done.stderr
        recorded = done.stdout.strip().splitlines()[-1]
        if schedule == "fixed":
            assert recorded == "['a', 'b', 'c', 'd']", recorded
        result, data = replay_json(path)
        assert data["status"] == "ok", data["message"]
        assert recorded in result.stdout, result.stdout


@pytest.mark.parametrize("variant", ["deadline", "failing"])
def test_anyio_task_groups_cancelled_while_calls_wait_their_turn_replay(tmp_path, variant):
    """anyio cancels a task in a cancelled scope again at each of its suspensions: a served
    call that waited on for its turn after each cancellation never returned, and the replay
    spun at 100% CPU until killed (helper-35: 2 of 3 under a deadline, 2 of 10 with a
    failing task). It waits on once (``cancelled_effects.TURN_TRIES``)."""
    program = shutil.copy(PROGRAMS / "anyio_groups.py", tmp_path / "anyio_groups.py")
    for n in range(3):
        path = tmp_path / f"{variant}-{n}.snap"
        done = run_python(str(program), str(path), variant, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        result, data = replay_json(path)  # (a child that hangs fails at the 60 s timeout)
        assert data["status"] == "ok", data["message"]
        assert done.stdout.strip().splitlines()[-1] in result.stdout, result.stdout


def test_framework_calls_cut_off_by_a_deadline_are_cut_off_again_on_replay(tmp_path):
    """A framework's model call (pydantic-ai's ``Model.request``, an effect through
    ``integrations/calls.py``) cut off by ``anyio.move_on_after``, ``asyncio.wait_for`` or a
    cancel scope another task cancels: its recorded ``CancelledError`` was raised at once on
    replay, before the deadline fired, and escaped the program (helper-35: 5 of 5 kinds of
    deadline). It waits to be cancelled again, as ``@snap.effect``'s calls do."""
    program = shutil.copy(PROGRAMS / "pydantic_ai_timeouts.py", tmp_path / "agent.py")
    path = tmp_path / "agent.snap"
    done = run_python(str(program), str(path), cwd=tmp_path)
    recorded = ("['moved on True', 'wait_for timed out', 'cancelled True', "
                "'answer to quick 0.01']")
    assert done.returncode == 0 and recorded in done.stdout, done.stdout + done.stderr
    with snap.open_timeline(path) as timeline:
        cancelled = [e for e in Journal(timeline.runs[-1]).entries if e.outcome == "raise"]
    assert len(cancelled) == 3 and all(0 < e.value["c"] < 3.0 for e in cancelled), cancelled
    result, data = replay_json(path)
    assert data["status"] == "ok", data["message"]
    assert recorded in result.stdout, result.stdout


def test_a_timeout_held_in_a_local_is_compared_by_type(tmp_path):
    """``async with asyncio.timeout(5) as deadline:`` keeps a ``Timeout`` whose deadline is a
    reading of the event loop's clock, another in every process: a traced replay diverged on
    it at every step that showed it (helper-33: 2 of 2). Timeouts and anyio's cancel scopes
    are compared by type, as locks are (``identity._LIVE_NAMES``)."""
    program = tmp_path / "deadline.py"
    program.write_text(
        "import asyncio\n"
        "import snapstate_capture as snap\n\n"
        "@snap.effect(name='model')\n"
        "async def model(prompt):\n"
        "    await asyncio.sleep(0.01)\n"
        "    return prompt.upper()\n\n"
        "async def main():\n"
        "    async with asyncio.timeout(5) as deadline:\n"
        "        answer = await model('hello')\n"
        "    return answer, deadline.expired()\n\n"
        "print(asyncio.run(main()))\n")
    path = tmp_path / "deadline.snap"
    done = run_cli("record", "--trace", "calls", "-o", str(path), str(program), cwd=tmp_path)
    assert done.returncode == 0 and "('HELLO', False)" in done.stdout, done.stderr
    _, data = replay_json(path)
    assert data["status"] == "ok", data["message"]
