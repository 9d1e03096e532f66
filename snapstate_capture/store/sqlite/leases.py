"""SQL of the ``leases`` table (format 6): who is resuming which run (``store/leases.py``)."""

from __future__ import annotations

from typing import Any

#: Column order of a lease row (``lease_rows``, ``lease_row``).
LEASE_COLUMNS = ("run_id", "token", "holder", "host", "pid", "acquired", "renewed", "expires",
                 "continued_as")
_LEASES = ", ".join(LEASE_COLUMNS)


class LeaseQueries:
    """Lease reads (``store.engine.ReadEngine.lease_rows``)."""

    query: Any

    def lease_rows(self) -> list[tuple]:
        if not self._has_leases():
            return []
        return self.query(f"SELECT {_LEASES} FROM leases")

    def has_leases(self) -> bool:
        """Whether the store has the ``leases`` table (a file of format 5 or older, or a
        database store of version 2 not upgraded by its owner, has not)."""
        return self._has_leases()

    def _has_leases(self) -> bool:
        """Whether the store has the table (a file of format 5 or older has not)."""
        return bool(self.query("SELECT name FROM sqlite_master WHERE type='table' AND"
                               " name='leases'"))

    def lease_row(self, run_id: str) -> tuple | None:
        rows = self.query(f"SELECT {_LEASES} FROM leases WHERE run_id=?", (run_id,))
        return rows[0] if rows else None


class LeaseWrites:
    """Lease writes (``store.engine.WriteEngine``): ``claim_continuation`` inside the caller's
    transaction; the others are transactions of their own."""

    execute: Any
    transaction: Any

    def lease_take(self, row: tuple, now: float) -> tuple[bool, tuple | None]:
        """Take the run's lease for ``row`` (``LEASE_COLUMNS`` without ``continued_as``, which
        is kept) unless a holder's lease is live at ``now``: one conditional upsert, atomic on
        any engine. Returns ``(taken, the row as it was before / as it is when refused)``."""
        with self.transaction(immediate=True):
            before = self.lease_row(row[0])  # type: ignore[attr-defined]
            taken = self.execute(
                "INSERT INTO leases (run_id, token, holder, host, pid, acquired, renewed,"
                " expires, continued_as) VALUES (?,?,?,?,?,?,?,?,NULL)"
                " ON CONFLICT (run_id) DO UPDATE SET token=excluded.token,"
                " holder=excluded.holder, host=excluded.host, pid=excluded.pid,"
                " acquired=excluded.acquired, renewed=excluded.renewed,"
                " expires=excluded.expires"
                " WHERE leases.token IS NULL OR leases.expires <= ?",
                (*row, now)).rowcount == 1
            if not taken:
                before = self.lease_row(row[0])  # type: ignore[attr-defined]
            return taken, before

    def lease_renew(self, run_id: str, token: str, now: float, expires: float) -> bool:
        with self.transaction():
            return self.execute("UPDATE leases SET renewed=?, expires=? WHERE run_id=? AND"
                                " token=?", (now, expires, run_id, token)).rowcount == 1

    def lease_release(self, run_id: str, token: str) -> bool:
        with self.transaction():
            return self.execute("UPDATE leases SET token=NULL, expires=0 WHERE run_id=? AND"
                                " token=?", (run_id, token)).rowcount == 1

    def claim_continuation(self, run_id: str, token: str, continuation: str,
                           now: float) -> bool:
        return self.execute(
            "UPDATE leases SET continued_as=? WHERE run_id=? AND token=? AND expires>?"
            " AND continued_as IS NULL", (continuation, run_id, token, now)).rowcount == 1
