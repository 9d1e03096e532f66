"""Live objects in a frame (locks, generators, open files, sockets) are captured again only when
their preview changed (issue 19): the same placeholder and capture error at every step, a
lock taken is seen at the step it is taken, and nothing is kept alive by the memory of them."""

from __future__ import annotations

import socket
import threading

import pytest

import snapstate_capture as snap
from snapstate_capture.capture import valuecache
from snapstate_capture.capture.frames import StackCapture
from snapstate_capture.options import CaptureOptions


@pytest.fixture
def captures(monkeypatch):
    """The names of the values captured whole (``capture_value`` runs) while the test runs."""
    names: list[str | None] = []
    original = valuecache.capture_value

    def counting(value, *, name=None, **kwargs):
        names.append(name)
        return original(value, name=name, **kwargs)

    monkeypatch.setattr(valuecache, "capture_value", counting)
    return names


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
