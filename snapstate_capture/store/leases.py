"""Resume leases: one resumer at a time per run, kept in the store (DESIGN.md "Durable waits").

A process that continues a run — answers a waiting run, wakes a sleeping one, resumes a
crashed one — first takes the run's **lease**: a row of ``leases`` naming the holder (a random
token, user, host, pid) and when it expires. The holder renews it (heartbeat) while it works;
a holder that dies stops renewing and the lease expires, so another resumer may take it — a
heartbeat after its last one, when the holder ran on the same machine and its process is gone
(killed by a signal).
When the holder creates the continuation run it **claims** the lease in the same transaction
(``claim_continuation``): the claim succeeds only while the token still holds an unexpired
lease and the run has no continuation yet, so a run is never continued twice — not even by a
holder that paused past its expiry and woke up after another took over.

A released lease keeps ``continued_as``: the run's continuation, for good.

The operations go through the store's engine (``store/engine.py``: ``lease_take``,
``lease_renew``, ``lease_release``, ``claim_continuation``, ``lease_rows``; the SQLite SQL is in
``store/sqlite/leases.py``), each atomic, so two processes (or machines sharing the store)
cannot both win. Times are wall-clock seconds since
the epoch; machines sharing a store need clocks within a fraction of the lease time.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import SnapStateError, TimelineError
from ..options import seconds_from_env
from .processes import process_gone

#: Seconds a lease lasts without a heartbeat (``SNAPSTATE_LEASE_SECONDS`` overrides).
DEFAULT_LEASE_SECONDS = 30.0
LEASE_ENV = "SNAPSTATE_LEASE_SECONDS"


def lease_seconds() -> float:
    """The lease time in force: ``SNAPSTATE_LEASE_SECONDS`` when set to a positive number."""
    return seconds_from_env(LEASE_ENV, DEFAULT_LEASE_SECONDS)


def login_name() -> str:
    """The operating-system user running this process (``getpass.getuser``, else the uid)."""
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in a container: the uid still says who
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"


@dataclass(frozen=True)
class Holder:
    """Who holds a lease: ``token`` (random hex), ``user``, ``host``, ``pid``, and the
    ``acquired``/``renewed``/``expires`` wall-clock times (epoch seconds)."""

    token: str
    user: str
    host: str
    pid: int
    acquired: float
    renewed: float
    expires: float

    def describe(self, now: float | None = None) -> str:
        """``alice@box (pid 4242) since 12:00:01, its lease renewed while it runs (expires in
        25 s)``: the expiry is no time to retry at while the holder works."""
        now = time.time() if now is None else now
        left = self.expires - now
        tail = (f"renewed while it runs (expires in {left:.0f} s)" if left >= 0
                else f"expired {-left:.0f} s ago")
        return (f"{self.user}@{self.host} (pid {self.pid}) since {_clock(self.acquired)}, "
                f"its lease {tail}")


@dataclass(frozen=True)
class Lease:
    """The lease row of one run: ``holder`` (None when free: never taken, released, or its
    holder's time ran out — see ``live``) and ``continued_as`` (the continuation's run id)."""

    run_id: str
    holder: Holder | None
    continued_as: str | None

    def live(self, now: float | None = None) -> bool:
        """True while a holder has the lease and it has not expired."""
        now = time.time() if now is None else now
        return self.holder is not None and self.holder.expires > now


class LeaseHeld(SnapStateError):
    """The run's lease is held by another live resumer (``holder``)."""

    def __init__(self, path: object, run_id: str, holder: Holder,
                 now: float | None = None) -> None:
        self.holder = holder
        now = time.time() if now is None else now
        gone = ""
        if _dead_here(holder):
            gone = (f"; its process is gone: a resume is taken from it in "
                    f"{max(_takeover_at(holder) - now, 0.0):.0f} s")
        super().__init__(f"{path}: run {run_id[:8]} is being resumed by "
                         f"{holder.describe(now)}{gone}")


class LeaseLost(SnapStateError):
    """The lease this process held expired and was taken, or the run was continued already."""


#: A holder's lease is renewed every third of its time (``replay/lease_keeper.py``); one that
#: has not been renewed for this share of it plus ``RENEW_SLACK`` seconds missed a heartbeat.
MISSED_RENEWAL = 1 / 3
RENEW_SLACK = 2.0


def _dead_here(holder: Holder) -> bool:
    """Whether ``holder`` ran on this machine (same host name) in a process that is gone
    (``processes.process_gone``). A reused pid counts as alive."""
    return (holder.host == socket.gethostname() and holder.pid > 0
            and holder.pid != os.getpid() and process_gone(holder.pid))


def _takeover_at(holder: Holder) -> float:
    """When a dead holder's lease may be taken: once it missed a heartbeat."""
    return holder.renewed + (holder.expires - holder.renewed) * MISSED_RENEWAL + RENEW_SLACK


def _holder_is_gone(holder: Holder, now: float) -> bool:
    """Whether ``holder``'s process is gone from this machine (``_dead_here``) *and* it has
    missed a heartbeat (``_takeover_at``).

    The heartbeat condition keeps a live resumer safe whose pid means nothing here: one in
    another PID namespace under the same host name (a container with the host's network) is
    still renewing, so its lease is never taken from it; a killed one stops, and its lease is
    taken a heartbeat later instead of at its expiry (~12 s instead of 30 s by default)."""
    return now >= _takeover_at(holder) and _dead_here(holder)


def _clock(when: float) -> str:
    return dt.datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S")


def _lease(row: tuple | None) -> Lease | None:
    if row is None:
        return None
    run_id, token, user, host, pid, acquired, renewed, expires, continued_as = row
    holder = None
    if token:
        holder = Holder(str(token), str(user or "?"), str(host or "?"), int(pid or 0),
                        float(acquired or 0), float(renewed or 0), float(expires or 0))
    return Lease(str(run_id), holder, continued_as)


class LeaseStore:
    """The lease operations on one store (its own write engine, ``store.locations``: a file,
    or later a database; a file of format 5 or older gets the ``leases`` table). Raises
    ``TimelineError`` from the constructor when the store cannot be opened for writing; the
    methods raise ``SnapStateError`` naming the store when it cannot be read or written."""

    def __init__(self, location: str | os.PathLike[str]) -> None:
        from .locations import location_label, open_write_engine

        self.path = location
        self._engine: Any = open_write_engine(location)
        if not self._engine.has_leases():
            # A file gets the table when opened for writing; a database store only from its
            # owner (a writer role may not add tables to an older store).
            where = location_label(location)
            self.close()
            raise TimelineError(where, "this store is older than this SnapState and has no "
                                       "leases table, which resuming needs: run `snapstate "
                                       "store init URL` connected as the store's owner")

    def close(self) -> None:
        """Close the engine (safe twice); the store is left as it is (no compaction)."""
        if self._engine is not None:
            self._engine.close(compact=False)
            self._engine = None

    def __enter__(self) -> LeaseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, work: Callable[[Any], Any]) -> Any:
        if self._engine is None:
            raise SnapStateError(f"{self.path}: lease store is closed")
        try:
            return work(self._engine)
        except SnapStateError:
            raise
        except Exception as exc:  # noqa: BLE001 - the driver's error, named once
            raise SnapStateError(f"{self.path}: lease: {type(exc).__name__}: {exc}") from None

    def get(self, run_id: str) -> Lease | None:
        """The lease row of ``run_id``, or None when nobody ever took it."""
        return self._run(lambda engine: _lease(engine.lease_row(run_id)))

    def acquire(self, run_id: str, *, user: str | None = None, ttl: float | None = None,
                now: float | None = None) -> tuple[Holder, Lease | None]:
        """Take the lease of ``run_id`` for ``ttl`` seconds (default ``lease_seconds()``).

        Returns the new ``Holder`` and the lease row as it was before (its ``continued_as``
        tells whether the run was continued already). Raises ``LeaseHeld`` while another
        holder's lease is live.
        """
        ttl = lease_seconds() if ttl is None else ttl
        moment = time.time() if now is None else now
        holder = Holder(uuid.uuid4().hex, user or login_name(), socket.gethostname(),
                        os.getpid(), moment, moment, moment + ttl)
        row = (run_id, holder.token, holder.user, holder.host, holder.pid, holder.acquired,
               holder.renewed, holder.expires)

        taken, old = self._run(lambda engine: engine.lease_take(row, moment))
        before = _lease(old)
        if not taken and before is not None and before.holder is not None \
                and _holder_is_gone(before.holder, moment):
            # a resumer on this machine that was killed: no need to wait out its lease. Taken
            # only while the row still holds that lease (a live resumer's take moves expires)
            taken, old = self._run(lambda engine: engine.lease_take(
                row, before.holder.expires))  # type: ignore[union-attr]
            if not taken:
                before = _lease(old)
        if not taken:
            assert before is not None and before.holder is not None
            raise LeaseHeld(self.path, run_id, before.holder, moment)
        return holder, before

    def renew(self, run_id: str, token: str, ttl: float | None = None) -> bool:
        """Heartbeat: extend the lease by ``ttl`` from now; False when ``token`` no longer holds
        it (it expired and another resumer took it, or it was released)."""
        ttl = lease_seconds() if ttl is None else ttl
        moment = time.time()
        return self._run(lambda engine: engine.lease_renew(run_id, token, moment, moment + ttl))

    def release(self, run_id: str, token: str) -> bool:
        """Give the lease up (``continued_as`` stays); False when ``token`` did not hold it."""
        return self._run(lambda engine: engine.lease_release(run_id, token))


def claim_continuation(engine: Any, run_id: str, token: str, continuation: str,
                       location: object = "") -> None:
    """Inside the caller's write transaction on ``engine``: record ``continuation`` as the
    run's one continuation. Raises ``LeaseLost`` (the caller rolls back) unless ``token``
    holds a live lease on ``run_id`` and the run has no continuation yet."""
    if not engine.claim_continuation(run_id, token, continuation, time.time()):
        raise LeaseLost(f"{location}: the lease on run {run_id[:8]} was lost (it expired and "
                        "another resumer took it, or the run was continued already)")


def read_leases(engine: Any) -> dict[str, Lease]:
    """Every lease row of a read ``engine``, by run id (none in a file of format 5 or older)."""
    out: dict[str, Lease] = {}
    for row in engine.lease_rows():
        lease = _lease(row)
        if lease is not None:
            out[lease.run_id] = lease
    return out
