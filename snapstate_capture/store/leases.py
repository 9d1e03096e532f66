"""Resume leases: one resumer at a time per run, kept in the store (DESIGN.md "Durable waits").

A process that continues a run — answers a waiting run, wakes a sleeping one, resumes a
crashed one — first takes the run's **lease**: a row of ``leases`` naming the holder (a random
token, user, host, pid) and when it expires. The holder renews it (heartbeat) while it works;
a holder that dies stops renewing and the lease expires, so another resumer may take it.
When the holder creates the continuation run it **claims** the lease in the same transaction
(``claim_continuation``): the claim succeeds only while the token still holds an unexpired
lease and the run has no continuation yet, so a run is never continued twice — not even by a
holder that paused past its expiry and woke up after another took over.

A released lease keeps ``continued_as``: the run's continuation, for good.

Every operation is one atomic statement or one ``BEGIN IMMEDIATE`` transaction, so two
processes (or machines sharing the store) cannot both win. Times are wall-clock seconds since
the epoch; machines sharing a store need clocks within a fraction of the lease time.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import SnapStateError
from .connection import DB_ERRORS, db_error_text, open_for_writing

#: Seconds a lease lasts without a heartbeat (``SNAPSTATE_LEASE_SECONDS`` overrides).
DEFAULT_LEASE_SECONDS = 30.0
LEASE_ENV = "SNAPSTATE_LEASE_SECONDS"

_COLUMNS = "run_id, token, user, host, pid, acquired, renewed, expires, continued_as"


def lease_seconds() -> float:
    """The lease time in force: ``SNAPSTATE_LEASE_SECONDS`` when set to a positive number."""
    try:
        value = float(os.environ.get(LEASE_ENV, ""))
    except ValueError:
        return DEFAULT_LEASE_SECONDS
    return value if value > 0 else DEFAULT_LEASE_SECONDS


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
        """``alice@box (pid 4242) since 12:00:01, lease expires in 25 s``."""
        now = time.time() if now is None else now
        left = self.expires - now
        tail = f"expires in {left:.0f} s" if left >= 0 else f"expired {-left:.0f} s ago"
        return (f"{self.user}@{self.host} (pid {self.pid}) since {_clock(self.acquired)}, "
                f"lease {tail}")


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

    def __init__(self, path: object, run_id: str, holder: Holder) -> None:
        self.holder = holder
        super().__init__(f"{path}: run {run_id[:8]} is being resumed by "
                         f"{holder.describe()}")


class LeaseLost(SnapStateError):
    """The lease this process held expired and was taken, or the run was continued already."""


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


class SqliteLeases:
    """The lease operations on a SQLite timeline file (its own connection; creates the
    ``leases`` table of format 4 in an older file). Raises ``TimelineError`` from the
    constructor when the file cannot be opened for writing; the methods raise ``TimelineError``
    when the file cannot be read or written."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = open_for_writing(self.path)

    def close(self) -> None:
        """Close the connection (safe twice)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> SqliteLeases:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        if self._conn is None:
            raise SnapStateError(f"{self.path}: lease store is closed")
        try:
            return work(self._conn)
        except DB_ERRORS as exc:
            raise SnapStateError(f"{self.path}: lease: {db_error_text(exc)}") from None

    def get(self, run_id: str) -> Lease | None:
        """The lease row of ``run_id``, or None when nobody ever took it."""
        return self._run(lambda conn: _lease(conn.execute(
            f"SELECT {_COLUMNS} FROM leases WHERE run_id=?", (run_id,)).fetchone()))

    def acquire(self, run_id: str, *, user: str | None = None, ttl: float | None = None,
                now: float | None = None) -> tuple[Holder, Lease | None]:
        """Take the lease of ``run_id`` for ``ttl`` seconds (default ``lease_seconds()``).

        Returns the new ``Holder`` and the lease row as it was before (its ``continued_as``
        tells whether the run was continued already). Raises ``LeaseHeld`` while another
        holder's lease is live.
        """
        ttl = lease_seconds() if ttl is None else ttl
        holder_user = user or login_name()

        def work(conn: sqlite3.Connection) -> tuple[Holder, Lease | None]:
            moment = time.time() if now is None else now
            conn.execute("BEGIN IMMEDIATE")
            try:
                before = _lease(conn.execute(f"SELECT {_COLUMNS} FROM leases WHERE run_id=?",
                                             (run_id,)).fetchone())
                if before is not None and before.live(moment):
                    assert before.holder is not None
                    raise LeaseHeld(self.path, run_id, before.holder)
                holder = Holder(uuid.uuid4().hex, holder_user, socket.gethostname(),
                                os.getpid(), moment, moment, moment + ttl)
                conn.execute(
                    "INSERT INTO leases (run_id, token, user, host, pid, acquired, renewed,"
                    " expires, continued_as) VALUES (?,?,?,?,?,?,?,?,NULL)"
                    " ON CONFLICT(run_id) DO UPDATE SET token=excluded.token,"
                    " user=excluded.user, host=excluded.host, pid=excluded.pid,"
                    " acquired=excluded.acquired, renewed=excluded.renewed,"
                    " expires=excluded.expires",
                    (run_id, holder.token, holder.user, holder.host, holder.pid,
                     holder.acquired, holder.renewed, holder.expires))
                conn.execute("COMMIT")
                return holder, before
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        return self._run(work)

    def renew(self, run_id: str, token: str, ttl: float | None = None) -> bool:
        """Heartbeat: extend the lease by ``ttl`` from now; False when ``token`` no longer holds
        it (it expired and another resumer took it, or it was released)."""
        ttl = lease_seconds() if ttl is None else ttl

        def work(conn: sqlite3.Connection) -> bool:
            moment = time.time()
            cursor = conn.execute("UPDATE leases SET renewed=?, expires=? WHERE run_id=?"
                                  " AND token=?", (moment, moment + ttl, run_id, token))
            return cursor.rowcount == 1

        return self._run(work)

    def release(self, run_id: str, token: str) -> bool:
        """Give the lease up (``continued_as`` stays); False when ``token`` did not hold it."""
        return self._run(lambda conn: conn.execute(
            "UPDATE leases SET token=NULL, expires=0 WHERE run_id=? AND token=?",
            (run_id, token)).rowcount == 1)


def claim_continuation(conn: sqlite3.Connection, run_id: str, token: str,
                       continuation: str, path: object = "") -> None:
    """Inside the caller's write transaction: record ``continuation`` as the run's one
    continuation. Raises ``LeaseLost`` (the caller rolls back) unless ``token`` holds a live
    lease on ``run_id`` and the run has no continuation yet."""
    moment = time.time()
    cursor = conn.execute(
        "UPDATE leases SET continued_as=? WHERE run_id=? AND token=? AND expires>?"
        " AND continued_as IS NULL", (continuation, run_id, token, moment))
    if cursor.rowcount != 1:
        raise LeaseLost(f"{path}: the lease on run {run_id[:8]} was lost (it expired and "
                        "another resumer took it, or the run was continued already)")


def read_leases(query: Callable[[str], list[tuple]]) -> dict[str, Lease]:
    """Every lease row, by run id, through a read-only ``query(sql)`` (the reader's). A file
    of format 3 or older has no ``leases`` table: no leases."""
    tables = query("SELECT name FROM sqlite_master WHERE type='table' AND name='leases'")
    if not tables:
        return {}
    out: dict[str, Lease] = {}
    for row in query(f"SELECT {_COLUMNS} FROM leases"):
        lease = _lease(row)
        if lease is not None:
            out[lease.run_id] = lease
    return out
