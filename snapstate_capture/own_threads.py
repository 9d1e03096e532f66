"""SnapState's own threads in the program's process leave the program's signals to it.

A signal sent to a process (``kill PID``: SIGTERM; Ctrl-C: SIGINT; ``signal.alarm``: SIGALRM)
is delivered by the kernel to any one of its threads that does not block it. Python runs
signal handlers in the main thread only, between two bytecodes; a main thread waiting in a
system call (``time.sleep``, ``select``, a blocking read) is woken at once only when the
signal was delivered to it — the call fails with EINTR and the handler runs. Delivered to
another thread, the handler waits until the main thread's call returns. An unrecorded
single-threaded program always gets its signals in the main thread; SnapState adds threads to
it (the trace stream's flusher, a replay's follower and lease keeper, ``record``'s progress
line), and a SIGTERM sent to a recorded program sleeping 30 s ended it after the 30 s, not at
once, whenever the kernel chose the flusher.

Each of those threads is started by ``start_own_thread``: the signals a process is sent from
outside are blocked in the starting thread while it starts one, so the new thread — which
takes its creator's signal mask — never has them unblocked, not even before its first
bytecode (blocking them from inside the thread left that window: under load, one run in ten
had the flusher unblocked when the program looked). The kernel then delivers them to the
program's threads, as without recording; one sent while the starter had them blocked waits,
pending, and is delivered when the mask is put back. Signals a thread raises by what it does
itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGPIPE, SIGABRT) stay unblocked:
they are that thread's own.
"""

from __future__ import annotations

import signal
from typing import Callable, TypeVar

#: Signals a thread causes itself (a fault, a write to a closed pipe): never blocked.
_SYNCHRONOUS = {getattr(signal, name) for name in (
    "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS", "SIGPIPE", "SIGABRT")
    if hasattr(signal, name)}

T = TypeVar("T")


def start_own_thread(start: Callable[[], T]) -> T:
    """Call ``start`` (which starts one of SnapState's threads: ``Thread.start``, or a
    ``_thread.start_new_thread`` call) with every signal but the synchronous ones blocked in
    the calling thread, and return what it returns; the calling thread's mask is put back
    after (module docstring). Where threads have no signal mask (Windows), or the platform
    refuses the set, it only calls ``start``. Raises what ``start`` raises."""
    mask = getattr(signal, "pthread_sigmask", None)
    previous = None
    if mask is not None:
        try:
            previous = mask(signal.SIG_BLOCK, signal.valid_signals() - _SYNCHRONOUS)
        except (OSError, ValueError):
            previous = None
    try:
        return start()
    finally:
        if previous is not None:
            mask(signal.SIG_SETMASK, previous)
