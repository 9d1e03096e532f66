"""The process's one flusher thread (``tracing/flusher.py``): traced runs one after another share
it, it hands every item over before a run ends, it ends once no run has been open for
``LINGER`` seconds, the program never sees it among its threads, and a forked child that
records gets its own."""

from __future__ import annotations

import os
import threading
import time

import pytest

import snapstate_capture as snap
from snapstate_capture.tracing import flusher as flusher_module
from snapstate_capture.tracing import stream as stream_module
from snapstate_capture.tracing.flusher import Flusher

HERE = __file__


def wait_until(condition, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def triple(x):
    return 3 * x


def traced_run(path):
    with snap.record(path, trace="calls", include=[HERE]):
        return [triple(i) for i in range(5)]


#: How long the flusher lingers in the tests that look at it between runs: a run's start and
#: end took over the real half second on a loaded machine (load 11), and the thread was gone.
PATIENT_LINGER = 5.0


def test_runs_one_after_another_share_one_flusher_thread_that_ends_when_idle(tmp_path,
                                                                              monkeypatch):
    flusher = stream_module._FLUSHER
    assert flusher.wait_ended(5)  # none left by earlier tests
    monkeypatch.setattr(flusher_module, "LINGER", PATIENT_LINGER)
    traced_run(tmp_path / "a.snap")
    first = flusher._ident
    traced_run(tmp_path / "b.snap")
    assert first is not None and flusher._ident == first  # the same thread served both
    assert flusher.wait_ended(flusher_module.LINGER + 3)
    traced_run(tmp_path / "c.snap")  # a new thread once the old one ended
    with snap.open_timeline(tmp_path / "c.snap") as timeline:
        steps = list(timeline.runs[-1].steps)
    assert [s.function for s in steps if s.kind == "call"] == ["triple"] * 5


def test_the_program_sees_the_threads_it_had_before_a_block(tmp_path, monkeypatch):
    """A thread-leak check after a recorded test (pytest fixtures do this) found the flusher
    thread still running for up to half a second: it is no ``threading.Thread`` at all now,
    so no registry the program can read holds it."""
    monkeypatch.setattr(flusher_module, "LINGER", PATIENT_LINGER)
    before = (threading.active_count(), list(threading.enumerate()))
    traced_run(tmp_path / "a.snap")
    assert stream_module._FLUSHER.running  # it lingers, waiting for the next run...
    assert (threading.active_count(), list(threading.enumerate())) == before  # ...unseen
    dangling = getattr(threading, "_dangling", set())
    assert not any("flusher" in repr(thread) for thread in dangling)


class SlowStream:
    """A stream whose flush takes a while and counts its calls (the flusher's only contract
    with a stream is ``flush()``)."""

    def __init__(self, seconds=0.0):
        self.seconds = seconds
        self.flushes = 0
        self.inside = threading.Event()

    def flush(self):
        self.inside.set()
        time.sleep(self.seconds)
        self.flushes += 1


def test_remove_returns_only_after_a_flush_in_progress_has_returned():
    flusher = Flusher(0.001)
    stream = SlowStream(seconds=0.2)
    flusher.add(stream)
    assert stream.inside.wait(5)
    flusher.remove(stream)
    done = stream.flushes
    assert done >= 1  # the flush that was running when remove was called has returned
    time.sleep(0.05)
    assert stream.flushes == done and not flusher.flushing(stream)


def test_the_thread_sleeps_without_streams_and_ends_after_linger(monkeypatch):
    monkeypatch.setattr(flusher_module, "LINGER", 0.1)
    flusher = Flusher(0.001)
    stream = SlowStream()
    flusher.add(stream)
    assert wait_until(lambda: stream.flushes >= 3)
    flusher.remove(stream)
    count = stream.flushes
    assert flusher.wait_ended(5) and not flusher.running
    assert stream.flushes == count
    flusher.add(stream)  # a new thread serves the next stream
    assert wait_until(lambda: stream.flushes > count)
    flusher.remove(stream)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_records_with_its_own_flusher(tmp_path, monkeypatch):
    monkeypatch.setattr(flusher_module, "LINGER", PATIENT_LINGER)
    traced_run(tmp_path / "parent.snap")  # the parent's flusher thread is running now
    assert stream_module._FLUSHER.running
    child_file = tmp_path / "child.snap"
    pid = os.fork()
    if pid == 0:  # the child: no thread was copied; recording must start its own
        try:
            traced_run(child_file)
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with snap.open_timeline(child_file) as timeline:
        run = timeline.runs[-1]
        assert run.status == "finished"
        assert [s.function for s in run.steps if s.kind == "call"] == ["triple"] * 5


def test_remove_gives_up_on_a_flush_stuck_past_its_timeout():
    """A flush stuck on the writer's pipe does not hold a run's end forever (the per-run
    thread this replaced was joined with the same 5 s limit)."""
    flusher = Flusher(0.001)
    stream = SlowStream(seconds=1.0)
    flusher.add(stream)
    assert stream.inside.wait(5)
    started = time.monotonic()
    flusher.remove(stream, timeout=0.1)
    assert time.monotonic() - started < 0.8


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_fork_while_another_thread_flushes_leaves_the_child_free_to_end(tmp_path):
    """A fork that came while the flusher held the stream's lock left it held in the child,
    and the child's end of the block waited on it forever (about one fork in sixty)."""
    block = snap.record(tmp_path / "forked.snap", trace="calls", include=[HERE])
    with block:
        stream = block.recorder._stream
        held, release = threading.Event(), threading.Event()

        def hold():
            with stream._lock:  # as a flush in progress does
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        assert held.wait(5)
        pid = os.fork()
        if pid == 0:  # the child leaves the block (its stream abandoned), then exits
            try:
                block.__exit__(None, None, None)
                os._exit(0)
            except BaseException:  # noqa: BLE001
                os._exit(1)
        release.set()
        holder.join()
        deadline = time.monotonic() + 10
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        if done[0] == 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        assert done[0] == pid and os.waitstatus_to_exitcode(done[1]) == 0
        triple(2)
