"""The SQLite read engine: one read-only connection, serialised by a lock."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import TimelineError
from .blobs import BlobQueries
from .chunks import ChunkQueries
from .connection import DB_ERRORS, db_error_text, open_for_reading
from .effects import EffectQueries
from .leases import LeaseQueries
from .runs import RunQueries
from .steps import StepQueries


class SQLiteReadEngine(RunQueries, StepQueries, BlobQueries, ChunkQueries, EffectQueries,
                       LeaseQueries):
    """``store.engine.ReadEngine`` over the timeline file at ``path`` (opened read-only).

    Raises ``TimelineError`` naming the file when it is missing, not a timeline, damaged or
    from a newer SnapState, and for any query that fails (``damaged timeline (…)``).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self._conn: sqlite3.Connection | None = open_for_reading(self.path)
        self._lock = threading.RLock()
        self._snapshots = 0

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run one read query and return all its rows (this package's SQL only)."""
        with self._lock:
            if self._conn is None:
                raise TimelineError(self.path, "timeline is closed")
            try:
                return self._conn.execute(sql, params).fetchall()
            except DB_ERRORS as exc:
                raise TimelineError(self.path, f"damaged timeline ({db_error_text(exc)})") \
                    from None

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction for the block (nested blocks share it): in WAL mode it sees the
        file as of its first read, whatever a writer commits meanwhile."""
        with self._lock:
            if self._conn is None:
                raise TimelineError(self.path, "timeline is closed")
            self._snapshots += 1
            if self._snapshots == 1:
                self._conn.execute("BEGIN")
        try:
            yield
        finally:
            with self._lock:
                self._snapshots -= 1
                if self._snapshots == 0 and self._conn is not None:
                    try:
                        self._conn.execute("COMMIT")
                    except DB_ERRORS:
                        pass  # a read transaction: ending it cannot lose anything

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def check_storage(self) -> str | None:
        rows = self.query("PRAGMA quick_check(1)")
        message = str(rows[0][0]) if rows else "no answer from integrity check"
        return None if message == "ok" else message
