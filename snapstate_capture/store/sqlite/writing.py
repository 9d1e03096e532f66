"""The SQLite write engine: one connection, explicit transactions, a safe close."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import WriteFailed
from .blobs import BlobQueries, BlobWrites
from .chunks import ChunkQueries, ChunkWrites
from .connection import close_file, open_for_writing
from .effects import EffectQueries, EffectWrites
from .leases import LeaseQueries, LeaseWrites
from .runs import RunQueries, RunWrites
from .steps import StepQueries, StepWrites

#: Files up to this size are compacted (VACUUM) when their writer closes: blob keys are random,
#: so B-tree pages end up about 3/4 full; rewriting them in key order takes ~40 ms per 1.5 MB
#: and saves ~15% (measured on W1). Bigger files, and files made mostly of trace chunks
#: (``_worth_compacting``), are left to ``snapstate gc``.
COMPACT_MAX = 32 * 1024 * 1024


class SQLiteWriteEngine(RunWrites, StepWrites, BlobWrites, ChunkWrites, EffectWrites, LeaseWrites,
                        RunQueries, StepQueries, BlobQueries, ChunkQueries, EffectQueries,
                        LeaseQueries):
    """``store.engine.WriteEngine`` over the timeline file at ``path`` (created owner-only
    when missing). Not thread-safe: the writer above it holds one lock around every call.
    Raises ``TimelineError`` when the file cannot be opened for writing, ``sqlite3.Error`` on
    I/O failure afterwards (the recorder turns those into a warning).
    """

    #: What a failed write raises here (``describe_failure`` puts it in words).
    write_errors = (sqlite3.Error, OSError)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self._conn: sqlite3.Connection | None = open_for_writing(self.path)
        self._identity = _identity(self.path)

    def check_place(self) -> None:
        """Raise ``WriteFailed`` when the file this engine writes is no longer at its path
        (deleted, or replaced by another file): what is written then reaches no reader."""
        now = _identity(self.path)
        if now == self._identity:
            return
        raise WriteFailed(self.path, "the file was deleted while recording" if now is None
                          else "the file was replaced by another while recording")

    @staticmethod
    def describe_failure(exc: BaseException) -> str:
        """A failed write in words, for the one line the recorder prints."""
        text = str(exc)
        if isinstance(exc, sqlite3.Error) and "full" in text:
            return "the disk is full"
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return "the disk is full"
        return f"a write failed ({text or type(exc).__name__})"

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection (for bulk loads in benchmarks only)."""
        assert self._conn is not None
        return self._conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.connection.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        return self.connection.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Read rows over the write connection (the read mixins' hook)."""
        return self.connection.execute(sql, params).fetchall()

    @contextlib.contextmanager
    def transaction(self, *, immediate: bool = False) -> Iterator[SQLiteWriteEngine]:
        conn = self.connection
        conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        try:
            yield self
            conn.execute("COMMIT")
        except BaseException:  # noqa: BLE001 - roll back on anything, then re-raise it
            if conn.in_transaction:  # SQLite ends a transaction itself on a full disk
                conn.execute("ROLLBACK")
            raise

    def exclude_writers(self) -> None:
        """Nothing to do: an ``immediate`` transaction already keeps other writers out."""

    def _worth_compacting(self) -> bool:
        """Whether VACUUM would reclaim much: not when trace chunks fill most pages. A chunk
        (~9 KB) takes a 16 KB page of its own and chunks are appended in key order, so
        rewriting them saves ~1% (4 M traced steps: 18.4 -> 18.2 MB) for ~70 ms at the end of
        every traced recording; blob pages (random keys, ~3/4 full) save ~15%."""
        pages = self.execute("PRAGMA page_count").fetchone()[0]
        return self.chunk_count() * 2 < pages

    def compact(self) -> None:
        """Rewrite the file without its free pages and leave WAL mode (``gc``): the VACUUM
        runs in WAL mode and the close is ``connection.close_file``'s, so a kill at any moment
        leaves a file readers open."""
        self.execute("VACUUM")
        close_file(self.connection)

    def close(self, *, compact: bool = True) -> None:
        """Fold the WAL into the main file, leave WAL mode, compact a small file
        (``COMPACT_MAX``, when ``compact``) and close; safe to call twice. No step of it,
        killed, leaves a file that readers cannot open (``connection.close_file``).

        A finished file in rollback-journal mode opens read-only anywhere (a read-only WAL file
        needs its ``-shm``/``-wal`` companions or a writable directory). When another connection
        still uses the file (a reader following it, a second recorder), the file stays in WAL
        mode and the last writer to close switches it.
        """
        if self._conn is None:
            return
        close_file(self._conn, compact=lambda: compact and os.path.getsize(self.path)
                   <= COMPACT_MAX and self._worth_compacting())
        self._conn.close()
        self._conn = None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino
