"""The heartbeat of a resume lease, kept by the process that writes the continuation.

The replay child that resumes a run renews the run's lease (``store/leases.py``) from a daemon
thread every third of the lease time, on its own connection, for as long as it lives: while
it replays, and while the continuation runs live. If the process dies the heartbeats stop and
the lease expires. If a renewal finds the lease taken by another resumer (this process was
stalled past the expiry), ``on_lost`` is called: the child then stops at once, writing nothing
more, so two processes never continue the same run.
"""

from __future__ import annotations

import threading
from typing import Callable

from ..errors import SnapStateError
from ..own_threads import start_own_thread
from ..store.leases import LeaseStore


class LeaseKeeper:
    """Renews the lease of ``run`` held under ``token`` every ``ttl / 3`` seconds.

    ``on_lost(message)`` runs in the heartbeat thread when the lease was lost (never returns
    normally in the replay child: it ends the process). ``stop(release=True)`` ends the
    heartbeat and gives the lease up. Raises ``TimelineError`` from the constructor when the
    file cannot be opened for writing.
    """

    def __init__(self, path: str, run: str, token: str, ttl: float,
                 on_lost: Callable[[str], None]) -> None:
        self.path, self.run, self.token, self.ttl = path, run, token, float(ttl)
        self.on_lost = on_lost
        self._store = LeaseStore(path)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._beat, name="snapstate-lease",
                                        daemon=True)

    def start(self) -> None:
        """Renew once now (failing fast when the lease is gone already), then keep renewing."""
        if not self._renew():
            self.on_lost(f"{self.path}: the lease on run {self.run[:8]} is not held any more")
            return
        start_own_thread(self._thread.start)

    def _renew(self) -> bool:
        with self._lock:
            if self._stop.is_set():
                return True
            try:
                return self._store.renew(self.run, self.token, self.ttl)
            except SnapStateError:
                return True  # a busy or unreadable file: try again at the next beat

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            if not self._renew():
                self.on_lost(f"{self.path}: the lease on run {self.run[:8]} expired and was "
                             "taken by another resumer; stopping without writing more")
                return

    def stop(self, *, release: bool = True) -> None:
        """Stop renewing; give the lease up when ``release`` (safe twice, from any thread)."""
        with self._lock:
            if self._stop.is_set():
                return
            self._stop.set()
            try:
                if release:
                    self._store.release(self.run, self.token)
            except SnapStateError:
                pass  # it expires on its own
            finally:
                self._store.close()
