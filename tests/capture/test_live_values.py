"""Live objects in a frame (locks, generators, open files, sockets) are captured again only when
their preview changed (issue 19): the same placeholder and capture error at every step, a
lock taken is seen at the step it is taken, and nothing is kept alive by the memory of them."""

from __future__ import annotations

import socket
import threading

import snapstate_capture as snap
from snapstate_capture.capture import valuecache
from snapstate_capture.capture.frames import StackCapture
from snapstate_capture.options import CaptureOptions


def _holding(steps: int, lock, path) -> None:
    handle = open(path, encoding="utf-8")  # noqa: SIM115 - held open across the steps
    conn = socket.socket()
    numbers = (n for n in range(10))
    for step in range(steps):
        if step == 2:
            lock.acquire()
        snap.checkpoint("tick")
        if step == 2:
            lock.release()
    next(numbers)
    handle.close()
    conn.close()


def _steps(path):
    with snap.open_timeline(path) as timeline:
        return [(step.errors, {name: value.repr for name, value in
                               step.frames[-1].locals.items()})
                for step in timeline.runs[-1].steps if step.label == "tick"]


def test_live_locals_are_captured_once_until_their_preview_changes(snap_path, tmp_path,
                                                                   captures):
    lock = threading.Lock()
    with snap.record(snap_path, name="live"):
        _holding(5, lock, __file__)
    steps = _steps(snap_path)
    assert len(steps) == 5
    # one capture each at the first step; the lock (a local of this frame and of _holding's)
    # again when taken (step 2) and when released (step 3): its preview says so
    assert [captures.count(name) for name in ("handle", "conn", "numbers", "lock")] == [
        1, 1, 1, 2 * 3]
    # the placeholder's reason is a capture error at every step, as when captured whole
    assert all(sorted(errors) == sorted(steps[0][0]) for errors, _ in steps)
    assert len(steps[0][0]) == 5 and all(
        any(e.startswith(f"{name}:") for e in steps[0][0])
        for name in ("handle", "conn", "numbers", "lock"))
    assert "unlocked" in steps[1][1]["lock"] and "unlocked" not in steps[2][1]["lock"]
    assert "unlocked" in steps[3][1]["lock"]


def test_a_live_object_the_program_drops_is_not_kept_alive():
    finalized: list[str] = []

    def numbers():
        try:
            yield 1
            yield 2
        finally:
            finalized.append("closed")

    cache = valuecache.ValueCache(CaptureOptions())
    slot = ("f", 0, "numbers", 0)
    gen = numbers()
    next(gen)
    first = cache.ref(slot, gen, "numbers", StackCapture())
    assert cache.ref(slot, gen, "numbers", StackCapture()) == first
    del gen  # the program lets go: the generator is finalized now, as without capture
    assert finalized == ["closed"]
    other = numbers()
    out = StackCapture()
    cache.ref(slot, other, "numbers", out)
    assert out.blobs  # another object in the slot: captured, not taken for the first


def test_a_forgotten_cache_captures_live_objects_again(captures):
    cache = valuecache.ValueCache(CaptureOptions())
    lock = threading.Lock()
    cache.ref(("f", 0, "lock", 0), lock, "lock", StackCapture())
    cache.ref(("f", 0, "lock", 0), lock, "lock", StackCapture())
    assert captures == ["lock"]
    cache.clear()  # a failed write: the blobs its refs name may never have been stored
    out = StackCapture()
    cache.ref(("f", 0, "lock", 0), lock, "lock", out)
    assert captures == ["lock", "lock"] and out.blobs


class Helper:
    """An agent object as programs write them: its own data beside a client and a lock."""

    def __init__(self):
        import httpx

        self.client = httpx.Client(base_url="https://api.example.invalid/v1")
        self.lock = threading.Lock()
        self.history: list[str] = []


def _helper_steps(helper: Helper) -> None:
    snap.checkpoint("same")
    snap.checkpoint("same again")
    helper.history.append("hello")
    snap.checkpoint("own data changed")
    with helper.lock:
        snap.checkpoint("lock taken")
    helper.client.base_url = "https://other.example.invalid/v2"
    snap.checkpoint("client moved")


def test_an_object_holding_a_client_and_a_lock_is_captured_again_only_when_it_changed(
        snap_path, captures):
    helper = Helper()
    with snap.record(snap_path, name="helper"):
        _helper_steps(helper)
    helper.client.close()
    # the first step, then each change: its own list, its lock's state, its client's line
    # (in this frame and in _helper_steps')
    assert captures.count("helper") == 2 * 4
    with snap.open_timeline(snap_path) as timeline:
        shown = {step.label: step.frames[-1].locals["helper"] for step in timeline.runs[-1].steps}
        children = dict(shown["client moved"].preview["children"])
        assert children[".client"]["repr"] == "<Client base_url=https://other.example.invalid/v2/>"
        assert shown["same"].preview_key == shown["same again"].preview_key
