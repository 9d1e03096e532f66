"""Manners for background scans (search, change scans, history) running in worker threads.

A CPU-bound Python thread keeps the GIL for whole switch intervals (5 ms, ``sys.
getswitchinterval``), and every time the UI thread lets go of the GIL — each SQLite query, each
wait for input — it must wait up to one interval to get it back. A key press makes dozens of
such waits, so one busy scan can turn a 15 ms key into a 200 ms one.

So scans work in small chunks and call ``Activity.pause`` between them: it sleeps
``YIELD_SECONDS`` (the UI gets the interpreter at once), and while a person is using the UI
(a key or click in the last ``QUIET_SECONDS``, told by ``Activity.touch``) it keeps the scan
asleep altogether. Work that cannot be cut into chunks (decoding one huge preview) calls
``Activity.step_aside`` often: free unless the UI is in use.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

YIELD_SECONDS = 0.002
QUIET_SECONDS = 0.25  # a key's handling and its frame take well under this (bench_inspector)
WAIT_SECONDS = 0.01


class Activity:
    """When the UI was last used; background threads step aside while it is in use.

    ``touch()`` is called on the UI thread for each key or click; ``pause()`` and
    ``step_aside()`` in worker threads (called on the UI thread itself they never wait).
    ``since`` (a ``time.monotonic()`` value, e.g. when a scan started) counts only keys after
    it: a scan a key asked for (next change of a variable) does not wait for that very key.
    Thread-safe: one float and one thread id, written by the UI thread only.
    """

    def __init__(self, quiet: float = QUIET_SECONDS) -> None:
        self.quiet = quiet
        self._last = float("-inf")
        self._ui_thread: int | None = None

    def touch(self) -> None:
        """The person just pressed a key or clicked (call on the UI thread)."""
        self._ui_thread = threading.get_ident()
        self._last = time.monotonic()

    def busy(self, since: float | None = None) -> bool:
        """True while the UI was used within the last ``quiet`` seconds (and after ``since``)."""
        if since is not None and self._last <= since:
            return False
        return self.idle_for() < self.quiet

    def idle_for(self) -> float:
        """Seconds since the last key or click (infinite before the first)."""
        return time.monotonic() - self._last

    def pause(self, cancelled: Callable[[], bool] | None = None,
              since: float | None = None) -> None:
        """Between two chunks of a scan: yield the interpreter for a moment, and keep waiting
        while the UI is in use (until ``cancelled()`` turns true)."""
        if threading.get_ident() == self._ui_thread:
            return
        time.sleep(YIELD_SECONDS)
        self.step_aside(cancelled, since)

    def step_aside(self, cancelled: Callable[[], bool] | None = None,
                   since: float | None = None) -> None:
        """Wait while the UI is in use (cheap when it is not): for long work without chunks."""
        if threading.get_ident() == self._ui_thread:
            return
        while self.busy(since) and not (cancelled is not None and cancelled()):
            time.sleep(WAIT_SECONDS)


def polite(worker: Any, activity: Activity | None = None) -> Callable[[], bool]:
    """A ``cancelled()`` callback for chunked scans that also yields between chunks (and steps
    aside while the UI is in use, given its ``activity``: for keys pressed after this call,
    so not for the key that started the scan)."""
    since = time.monotonic()

    def cancelled() -> bool:
        if activity is not None:
            activity.pause(lambda: bool(worker.is_cancelled), since)
        else:
            time.sleep(YIELD_SECONDS)
        return bool(worker.is_cancelled)
    return cancelled
