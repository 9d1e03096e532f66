"""Capture never changes the program: generators, tasks, locks, properties, buffers, lifetimes,
``sys.exc_info()`` (issue 3, "Side-effect freedom"). Each case is a recorded run read back."""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
import weakref
from functools import cached_property

import snapstate_capture as snap

from .values_support import child, read_locals, step_errors


def test_suspended_generator_still_yields_its_next_item(snap_path):
    def numbers():
        yield 1
        yield 2
        yield 3

    gen = numbers()
    assert next(gen) == 1
    with snap.record(snap_path):
        snap.checkpoint("gen")
    assert inspect.getgeneratorstate(gen) == "GEN_SUSPENDED"
    assert next(gen) == 2

    got = read_locals(snap_path)["gen"]
    assert got["preview"]["state"] == "GEN_SUSPENDED"
    assert "generator object" in got["preview"]["repr"]
    assert "cannot be saved" in got["preview"]["placeholder"]["reason"]
    assert not got["has_payload"]


def test_pending_task_and_its_coroutine_are_left_alone(snap_path):
    async def worker():
        await asyncio.sleep(30)

    async def main():
        task = asyncio.create_task(worker(), name="slow-worker")
        coro = task.get_coro()
        fresh = worker()  # a coroutine never awaited
        await asyncio.sleep(0)
        before = asyncio.all_tasks()
        states = (inspect.getcoroutinestate(coro), inspect.getcoroutinestate(fresh))
        snap.checkpoint("tasks")
        assert asyncio.all_tasks() == before
        assert (inspect.getcoroutinestate(coro), inspect.getcoroutinestate(fresh)) == states
        assert not task.done() and task.cancelling() == 0
        fresh.close()
        task.cancel()
        return states

    with snap.record(snap_path):
        states = asyncio.run(main())
    assert states == ("CORO_SUSPENDED", "CORO_CREATED")

    got = read_locals(snap_path)
    assert "pending" in got["task"]["preview"]["repr"]
    assert got["task"]["preview"]["placeholder"]["reason"].startswith("a pending")
    assert got["fresh"]["preview"]["state"] == "CORO_CREATED"


def test_lock_held_during_capture_no_deadlock_shown_locked(snap_path):
    lock = threading.Lock()
    rlock = threading.RLock()
    done = threading.Event()

    def program():
        with lock, rlock:
            snap.checkpoint("holding")
        done.set()

    with snap.record(snap_path):
        worker = threading.Thread(target=program)
        worker.start()
        worker.join(timeout=20)
    assert done.is_set(), "capture deadlocked on a held lock"
    assert not lock.locked()

    with snap.open_timeline(snap_path) as timeline:
        frames = timeline.runs[-1].steps[-1].frames
        found = {name: value.preview for f in frames for name, value in f.locals.items()}
    assert found["lock"]["locked"] is True
    assert found["lock"]["repr"].startswith("<locked")
    assert "locked" in found["rlock"]["repr"]
    assert found["lock"]["placeholder"]["reason"] == "a lock is live state: not serialized"


class Report:
    computed = 0

    def __init__(self, rows):
        self.rows = rows

    @cached_property
    def total(self):
        Report.computed += 1
        return sum(self.rows)

    @property
    def loud(self):
        raise AssertionError("a property was evaluated by capture")


def test_cached_property_never_computed_by_capture(snap_path):
    Report.computed = 0
    report = Report([1, 2, 3])
    with snap.record(snap_path):
        for _ in range(3):
            snap.checkpoint("before")
        assert Report.computed == 0
        assert report.total == 6  # the program computes it
        snap.checkpoint("after")
    assert Report.computed == 1

    before = read_locals(snap_path, step=0)["report"]
    labels = [label for label, _ in before["preview"]["children"]]
    assert labels == [".rows"]
    assert "total" not in before["value"].__dict__
    after = read_locals(snap_path, step=-1)["report"]
    assert child(after["preview"], ".total")["repr"] == "6"
    assert after["value"].total == 6 and Report.computed == 1


def test_memoryview_over_growing_bytearray_no_buffer_error(snap_path):
    buffer = bytearray(b"header")
    view = memoryview(buffer)
    with snap.record(snap_path):
        snap.checkpoint("view")
        view.release()
        buffer.extend(b"x" * 1000)  # BufferError if capture kept an export
        snap.checkpoint("grown")
    assert len(buffer) == 1006

    got = read_locals(snap_path, step=0)["view"]
    assert got["preview"]["repr"].startswith("<memoryview 6 bytes")
    assert bytes(got["value"]) == b"header"


def test_weak_references_die_normally(snap_path):
    class Thing:
        pass

    thing = Thing()
    holder = {"thing": thing}
    ref = weakref.ref(thing)
    with snap.record(snap_path):
        snap.checkpoint("alive")
        del thing
        holder.clear()
        assert ref() is None, "capture kept the object alive"
        snap.checkpoint("gone")
    assert "thing" in read_locals(snap_path, step=0)


def test_locals_snapshot_release_leaves_program_namespace_alone(snap_path):
    with snap.record(snap_path):
        x = 1
        namespace = locals()
        snap.checkpoint()
        assert namespace["x"] == 1 and "namespace" in namespace
    assert read_locals(snap_path)["x"]["value"] == 1


def test_exc_info_unchanged_even_when_capture_meets_errors(snap_path):
    class Hostile:
        def __repr__(self):
            raise ValueError("no repr")

        def __reduce_ex__(self, protocol):
            raise TypeError("no pickle")

    with snap.record(snap_path):
        try:
            raise KeyError("outer")
        except KeyError:
            before = sys.exc_info()
            hostile = Hostile()
            snap.checkpoint("in handler")
            assert sys.exc_info() == before
        assert sys.exc_info() == (None, None, None)
    assert hostile
    assert read_locals(snap_path)["hostile"]["preview"]["repr"] == (
        "<repr failed: ValueError: no repr>")
    assert any("hostile" in e for e in step_errors(snap_path))


class Proxy:
    """Forwards unknown attributes to ``_target`` — which does not exist yet in ``__init__``."""

    getattr_calls = 0

    def __init__(self, target):
        snap.checkpoint("inside init")
        self._target = target
        snap.checkpoint("after init")

    def __getattr__(self, name):
        Proxy.getattr_calls += 1
        return getattr(self._target, name)


def test_getattr_forwarding_object_captured_inside_init(snap_path):
    Proxy.getattr_calls = 0
    with snap.record(snap_path):
        proxy = Proxy([1, 2])
    assert Proxy.getattr_calls == 0, "capture triggered __getattr__"
    assert proxy._target == [1, 2]

    inside = read_locals(snap_path, step=0)["self"]
    assert inside["preview"]["type"].endswith("Proxy")
    assert "children" not in inside["preview"] or inside["preview"]["children"] == []
    after = read_locals(snap_path, step=1)["self"]
    assert child(after["preview"], "._target")["repr"] == "[1, 2]"
    assert after["value"]._target == [1, 2]
    assert "not_loadable" not in after["preview"]
    assert Proxy.getattr_calls == 0, "loading the payload triggered __getattr__"


class HalfBuilt:
    def __init__(self, name):
        snap.checkpoint("half")
        self.name = name
        self.size = len(name)

    def __repr__(self):
        return f"HalfBuilt({self.name!r}, {self.size})"


def test_raising_repr_and_half_initialised_self(snap_path):
    with snap.record(snap_path):
        built = HalfBuilt("abc")
        snap.checkpoint("built")
    assert built.size == 3
    half = read_locals(snap_path, step=0)["self"]
    assert half["preview"]["repr"].startswith("<repr failed: AttributeError:")
    assert half["has_payload"]
    full = read_locals(snap_path, step=1)["built"]
    assert full["preview"]["repr"] == "HalfBuilt('abc', 3)"
    assert full["value"].size == 3


def test_an_instance_dict_key_of_the_programs_own_type_is_never_turned_to_text(snap_path):
    calls = []

    class Key:
        def __str__(self):
            calls.append("str")
            return "key"

        def __repr__(self):
            calls.append("repr")
            return "Key()"

        def __hash__(self):
            return 1

        def __eq__(self, other):
            return self is other

    class Named(str):
        def __str__(self):
            calls.append("named")
            return "other"

    class Holder:
        pass

    holder = Holder()
    holder.__dict__[Key()] = 1
    holder.__dict__[Named("tag")] = 2
    holder.plain = 3
    with snap.record(snap_path):
        snap.checkpoint("held")
    hashed = calls.count("str") + calls.count("repr") + calls.count("named")
    assert hashed == 0, calls
    assert read_locals(snap_path)["holder"]["preview"]["type"].endswith("Holder")


def test_a_private_slot_is_read_under_its_mangled_name():
    from snapstate_capture.values.static import static_attributes

    class Slotted:
        __slots__ = ("__hidden", "shown")

        def __init__(self):
            self.__hidden = 1
            self.shown = 2

    assert dict(static_attributes(Slotted())) == {"_Slotted__hidden": 1, "shown": 2}


class Rows:
    """Holds a generator its repr would drain (sqlparse's ``Statement.tokens`` after an output
    filter: its repr joined the tokens)."""

    def __init__(self, rows):
        self.rows = (row for row in rows)
        self.pending = map(str, rows)

    def __repr__(self):
        return f"Rows({list(self.rows)}, {list(self.pending)})"


def test_a_repr_that_would_drain_a_held_generator_is_not_called(snap_path):
    with snap.record(snap_path):
        held = Rows([1, 2, 3])
        snap.checkpoint("held")
    assert list(held.rows) == [1, 2, 3]
    assert list(held.pending) == ["1", "2", "3"]
    got = read_locals(snap_path)["held"]
    assert got["preview"]["repr"] == "<repr not called: it could advance .rows (a generator)>"
