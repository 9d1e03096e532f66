"""One flusher thread per process: hands every open traced stream's items over at a fixed pace.

A traced run's tracer appends its steps to ``Stream.items``; every ``interval`` seconds (the
stream's ``FLUSH_SECONDS``) something must call ``Stream.flush`` so the writer process gets
them (or, for a held run, so they wait as compact marshal messages). One thread does that for
every stream open in the process, started at the first stream and kept: starting and joining a
thread per run cost ~0.2 ms, as much as the rest of a small run's start and end — what
``pytest --snapstate`` pays for every test. When no stream has been open for ``LINGER``
seconds the thread ends; the next stream starts a new one.

The thread is a bare ``_thread`` thread, not a ``threading.Thread``: the program never sees it
in ``threading.enumerate()``, ``active_count()`` or ``threading._dangling`` — a test's
thread-leak check after a recorded test, or traced standard-library code reading those
registries (``--include '*'``), would otherwise find a thread that is not the program's. It
never asks ``threading.current_thread()`` (that would register it), is not traced
(``threading.settrace`` hooks only ``threading.Thread``s, and it clears its own trace
function), and, like a daemon thread, does not hold up the interpreter's exit.

A stream is flushed by this thread only between ``add`` and ``remove``; ``remove`` waits until
a flush of that stream in progress here has returned, so after it the stream's owner alone
touches the stream (its final flush and end message come after every flush of ours). In a
forked child the thread does not exist: the registry is emptied there (the child's streams are
abandoned, ``tracer._after_fork_in_child``) and the next ``add`` starts a new thread.
"""

from __future__ import annotations

import _thread
import sys
import threading
from typing import Any

from ..clocks import Clocks
from ..own_threads import start_own_thread

#: Seconds the thread waits for another stream once none is open, before it ends: a test
#: suite's next test starts well within it.
LINGER = 0.5


class Flusher:
    """The process's flusher thread and the streams it flushes (see the module docstring).
    ``interval``: seconds between two rounds of flushes."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._streams: list[Any] = []
        self._busy: Any = None  # the stream being flushed now, outside the lock
        self._cond = threading.Condition()
        self._ident: int | None = None  # the running thread's ident, None when there is none
        self._ended = threading.Event()  # set when the thread has left its loop
        self._ended.set()

    @property
    def running(self) -> bool:
        """True while the flusher thread exists."""
        with self._cond:
            return self._ident is not None

    def wait_ended(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the thread to end; True when there is none."""
        return self._ended.wait(timeout)

    def add(self, stream: Any) -> None:
        """Flush ``stream`` every ``interval`` from now until ``remove(stream)``."""
        with self._cond:
            if stream not in self._streams:
                self._streams.append(stream)
            if self._ident is None:
                self._ended.clear()
                self._ident = start_own_thread(lambda: _thread.start_new_thread(self._run, ()))
            self._cond.notify_all()

    def remove(self, stream: Any, timeout: float = 5.0) -> None:
        """Stop flushing ``stream``; returns once no flush of it is running in the thread (at
        once when called from the thread itself, or when it was not added), or after
        ``timeout`` seconds of waiting for one (a flush stuck on the writer's pipe)."""
        deadline = Clocks.monotonic() + timeout
        with self._cond:
            if stream in self._streams:
                self._streams.remove(stream)
            if _thread.get_ident() == self._ident:
                return
            while self._busy is stream:
                left = deadline - Clocks.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    def flushing(self, stream: Any) -> bool:
        """True while ``stream`` is flushed by this thread (between ``add`` and ``remove``)."""
        with self._cond:
            return stream in self._streams

    def _run(self) -> None:
        sys.settrace(None)
        try:
            self._loop()
        finally:
            self._ended.set()

    def _loop(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while not self._streams:
                    if not cond.wait(LINGER) and not self._streams:
                        self._ident = None  # the next ``add`` starts another
                        return
                cond.wait(self.interval)  # an ``add`` or ``remove`` wakes it early: harmless
                streams = list(self._streams)
            for stream in streams:
                with cond:
                    if stream not in self._streams:
                        continue
                    self._busy = stream
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001 - flush never raises; the thread never dies
                    pass
                finally:
                    with cond:
                        self._busy = None
                        cond.notify_all()

    def after_fork_in_child(self) -> None:
        """The child of a fork: no thread here, and no stream of the parent's to flush."""
        self._cond = threading.Condition()
        self._streams = []
        self._busy = None
        self._ident = None
        self._ended = threading.Event()
        self._ended.set()
