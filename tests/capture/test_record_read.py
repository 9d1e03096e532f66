"""Recording runs with the capture API and reading them back with the reader API."""

from __future__ import annotations

import asyncio
import gc
import os
import pickle
import stat
import threading
import weakref

import pytest

import snapstate_capture as snap
from tests.hostile import as_stranger


def test_checkpoint_records_stack_locals_and_extra(snap_path):
    def inner(x):
        y = x * 2
        snap.checkpoint("inner", note="hello")
        return y

    def outer():
        total = inner(21)
        return total

    with snap.record(snap_path, name="basic") as block:
        result = outer()
    assert result == 42

    with snap.open_timeline(snap_path) as timeline:
        run = timeline.runs[-1]
        assert run.id == block.run_id
        assert (run.name, run.status) == ("basic", "finished")
        assert run.entry["kind"] in ("script", "module", "unknown")
        assert run.env["python"]
        step = run.steps[0]
        assert (step.index, step.kind, step.label) == (0, "checkpoint", "inner")
        functions = [f.function for f in step.frames]
        assert functions[-2:] == [
            "test_checkpoint_records_stack_locals_and_extra.<locals>.outer",
            "test_checkpoint_records_stack_locals_and_extra.<locals>.inner"]
        innermost = step.frames[-1]
        assert innermost.locals["x"].repr == "21"
        assert innermost.locals["y"].repr == "42"
        assert innermost.locals["y"].type_name == "builtins.int"
        assert step.extra["note"].repr == "'hello'"
        assert "snap.checkpoint(\"inner\"" in innermost.source[innermost.lineno - 1]
        assert step.thread == "MainThread"


def test_outside_record_is_a_noop():
    assert snap.checkpoint("nothing") is None

    @snap.step
    def double(x):
        return 2 * x

    assert double(4) == 8


def test_step_decorator_records_call_and_return(snap_path):
    @snap.step
    def plan(goal):
        return [goal, goal + "!"]

    with snap.record(snap_path):
        plan("ship")

    with snap.open_timeline(snap_path) as timeline:
        steps = timeline.runs[-1].steps[:]
        assert [s.kind for s in steps] == ["call", "return"]
        assert steps[0].extra["goal"].repr == "'ship'"
        assert steps[1].extra["return"].repr == "['ship', 'ship!']"


def test_failed_run_records_exception_step(snap_path):
    def explode(value):
        ratio = value / 0
        return ratio

    with pytest.raises(ZeroDivisionError):
        with snap.record(snap_path):
            explode(3)

    with snap.open_timeline(snap_path) as timeline:
        run = timeline.runs[-1]
        assert run.status == "failed"
        assert run.error["type"] == "builtins.ZeroDivisionError"
        last = run.steps[-1]
        assert last.kind == "exception"
        assert last.frames[-1].function.endswith("explode")
        assert last.frames[-1].locals["value"].repr == "3"
        assert last.extra["exception"].type_name == "builtins.ZeroDivisionError"


def test_many_runs_per_file_and_id_prefix(snap_path):
    ids = []
    for n in range(3):
        with snap.record(snap_path, name=f"r{n}") as block:
            snap.checkpoint()
        ids.append(block.run_id)
    with snap.open_timeline(snap_path) as timeline:
        assert [r.id for r in timeline.runs] == ids
        assert timeline.run(ids[1][:6]).name == "r1"
        assert timeline.run().name == "r2"
        with pytest.raises(snap.NotFoundError):
            timeline.run("zzzz")


def test_decorator_records_a_new_run_per_call(snap_path):
    @snap.record(snap_path, name="job")
    def job(n):
        snap.checkpoint(n=n)
        return n

    job(1)
    job(2)
    with snap.open_timeline(snap_path) as timeline:
        assert [r.name for r in timeline.runs] == ["job", "job"]
        assert [r.steps[0].extra["n"].repr for r in timeline.runs] == ["1", "2"]


def test_steps_are_a_lazy_sequence(snap_path):
    with snap.record(snap_path):
        for i in range(25):
            snap.checkpoint(i=i)
    with snap.open_timeline(snap_path) as timeline:
        steps = timeline.runs[0].steps
        assert len(steps) == 25
        assert steps[-1].index == 24
        assert [s.index for s in steps[5:8]] == [5, 6, 7]
        assert [s.index for s in steps[::10]] == [0, 10, 20]
        assert [s.index for s in steps] == list(range(25))
        with pytest.raises(IndexError):
            steps[25]


def test_threads_and_tasks_are_recorded_per_step(snap_path):
    def worker(n):
        local_value = n * 10
        snap.checkpoint("worker", n=n)
        return local_value

    async def task_body(name):
        await asyncio.sleep(0)
        snap.checkpoint("task")

    async def main():
        await asyncio.gather(asyncio.create_task(task_body("a"), name="alpha"),
                             asyncio.create_task(task_body("b"), name="beta"))

    with snap.record(snap_path):
        threads = [threading.Thread(target=worker, args=(n,), name=f"w{n}") for n in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        asyncio.run(main())

    with snap.open_timeline(snap_path, trust=True) as timeline:
        steps = timeline.runs[0].steps[:]
        workers = [s for s in steps if s.label == "worker"]
        assert sorted(s.thread for s in workers) == ["w0", "w1", "w2"]
        for s in workers:
            assert s.frames[-1].locals["local_value"].repr == str(s.extra["n"].load() * 10)
        tasks = sorted(s.task for s in steps if s.label == "task")
        assert tasks == ["alpha", "beta"]


def test_file_is_owner_only(snap_path):
    with snap.record(snap_path):
        snap.checkpoint()
    assert stat.S_IMODE(os.stat(snap_path).st_mode) == 0o600


def test_unchanged_values_are_stored_once(snap_path):
    big = list(range(200_000))
    with snap.record(snap_path):
        for _ in range(6):
            snap.checkpoint()
    assert big
    with snap.open_timeline(snap_path) as timeline:
        payload_keys = {s.frames[-1].locals["big"].payload_key for s in timeline.runs[0].steps}
        assert len(payload_keys) == 1
        (stored,) = timeline.engine.query("SELECT sum(length(data)) FROM blobs")[0]
    assert stored < 2 * len(pickle.dumps(big))


def test_load_requires_trust(snap_path):
    with as_stranger(snap_path.parent), snap.record(snap_path):
        payload = {"a": [1, 2, 3]}
        snap.checkpoint()
    assert payload
    with snap.open_timeline(snap_path) as timeline:
        value = timeline.runs[0].steps[0].frames[-1].locals["payload"]
        with pytest.raises(snap.UntrustedPayloadError):
            value.load()
        assert value.load(trust=True) == {"a": [1, 2, 3]}


def test_finished_file_opens_read_only_without_companion_files(tmp_path):
    path = tmp_path / "ro.snap"
    with snap.record(path):
        snap.checkpoint("one")
    assert not os.path.exists(f"{path}-wal")
    os.chmod(tmp_path, 0o500)  # a read-only directory: no -shm/-wal can be created there
    try:
        with snap.open_timeline(path) as timeline:
            assert timeline.runs[0].steps[0].label == "one"
        assert sorted(n for n in os.listdir(tmp_path) if n.startswith("ro.")) == ["ro.snap"]
    finally:
        os.chmod(tmp_path, 0o700)


def test_exception_leaving_a_step_function_and_the_block_is_one_step(snap_path):
    @snap.step
    def fail(n):
        raise KeyError(n)

    with pytest.raises(KeyError):
        with snap.record(snap_path):
            for n in range(2):
                try:
                    fail(n)
                except KeyError:
                    pass  # caught: each raise is its own exception step
            fail(9)

    with snap.open_timeline(snap_path) as timeline:
        kinds = [s.kind for s in timeline.runs[-1].steps]
    assert kinds == ["call", "exception"] * 3


def test_a_record_block_bound_in_the_frame_is_machinery(snap_path):
    """``with snap.record(p) as rec:`` puts SnapState's own recorder in the program's frame:
    it is previewed as what it writes to, never pickled (pickling it cost ~80 ms a step)."""
    with snap.record(snap_path) as rec:
        total = 0
        for i in range(3):
            total += i
            snap.checkpoint("loop")
    with snap.open_timeline(snap_path) as timeline:
        steps = list(timeline.runs[-1].steps)
        assert len(steps) == 3
        for step in steps:
            value = step.frames[-1].locals["rec"]
            assert value.repr == f"<record file={os.path.basename(snap_path)}>"
            assert not value.has_payload
        assert steps[-1].frames[-1].locals["total"].repr == "3"


def test_step_arguments_keep_no_function_alive_and_follow_a_swapped_code(snap_path):
    """``@step`` binds arguments through a signature worked out once per function: the memory
    of it keeps no function decorated per call alive, and a function whose code a hot reloader
    swapped is bound by its new parameters (both found by an adversarial test)."""
    class Held:
        pass

    alive = []

    def make():
        held = Held()
        alive.append(weakref.ref(held))

        @snap.step
        def handle(x):
            return held and x
        return handle

    def work(query, limit):
        return limit

    def edited(question, limit):
        return limit

    stepped = snap.step(work)
    with snap.record(snap_path, name="signatures"):
        for number in range(3):
            make()(number)
        stepped("a", 1)
        work.__code__ = edited.__code__
        stepped(question="b", limit=2)
    gc.collect()
    assert [ref() for ref in alive] == [None, None, None]
    with snap.open_timeline(snap_path) as timeline:
        calls = [step for step in timeline.runs[-1].steps if step.kind == "call"]
        assert sorted(calls[-2].extra) == ["limit", "query"]
        assert sorted(calls[-1].extra) == ["limit", "question"]


def test_reading_the_file_beside_a_live_recording_leaves_the_recordings_locks(tmp_path):
    """SQLite's locks are POSIX record locks, which a process drops on every descriptor of a
    file when it closes any one of them. Opening the timeline for reading in the recording's
    own process (``snap.open_timeline``, the replay child's reads) must not close a plain descriptor of
    it: another process could then leave WAL mode under the live writer, whose steps went into
    a ``-wal`` that was no longer the file's."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    path = tmp_path / "live.snap"
    fold = ("import sys; from pathlib import Path; from snapstate_capture.store.sqlite."
            "connection import fold_left_wal; print(fold_left_wal(Path(sys.argv[1])))")
    with snap.record(path, name="live"):
        snap.checkpoint("first")
        with snap.open_timeline(path) as timeline:
            assert len(timeline.runs[0].steps) == 1
        taken = subprocess.run([sys.executable, "-c", fold, str(path)], capture_output=True,
                               text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert taken.stdout.strip() == "False", taken.stderr  # the file stays the writer's
        assert os.path.exists(f"{path}-wal")
        snap.checkpoint("second")
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[0]
        assert run.status == "finished" and [s.label for s in run.steps] == ["first", "second"]
