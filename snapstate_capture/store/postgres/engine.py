"""The PostgreSQL read and write engines (``store.engine.ReadEngine`` / ``WriteEngine``).

The questions are those of the SQLite engine and so is most of their SQL, which is standard:
the engines reuse ``store.sqlite``'s per-concern query classes and translate their dialect on
the way (``?`` parameters, ``instr``, ``IS NOT``); what differs more — the recursive delta-chain
query, idempotent blob inserts, run numbering by a sequence so concurrent recorders never
collide, no file to compact — is written here.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from ...errors import TimelineError
from ..engine import RUN_COLUMNS, STEP_COLUMNS
from ..sqlite.blobs import BlobQueries, BlobWrites
from ..sqlite.chunks import ChunkQueries, ChunkWrites
from ..sqlite.effects import EffectQueries, EffectWrites
from ..sqlite.leases import LeaseQueries, LeaseWrites
from ..sqlite.runs import RunQueries, RunWrites
from ..sqlite.steps import StepQueries, StepWrites
from .connection import connect, errors, redacted
from .schema import SCHEMA_NAME

_CHAIN = (
    "WITH RECURSIVE chain(hash, codec, size, data, depth) AS ("
    " SELECT hash, codec, size, data, 0 FROM blobs WHERE hash = %(key)s"
    " UNION ALL"
    " SELECT b.hash, b.codec, b.size, b.data, chain.depth + 1 FROM chain"
    " JOIN blobs AS b ON b.hash = substring(chain.data from 1 for 16)"
    " WHERE (chain.codec & ~16) IN (3, 4) AND chain.depth < %(depth)s)"
    " SELECT hash, codec, size, {data} FROM chain")
_FULL_CHAIN = _CHAIN.format(data="data")
_HEAD_CHAIN = _CHAIN.format(data="substring(data from 1 for 16)")
# One statement for a whole batch (arrays unnested in their order: the rows' locks are taken
# in key order), not one per row: the writer's CPU per step is mostly its driver's per-row work.
_INSERT_BLOBS = ("INSERT INTO blobs (hash, codec, size, data) SELECT * FROM"
                 " unnest(%b::bytea[], %b::int[], %b::bigint[], %b::bytea[])"
                 " ON CONFLICT (hash) DO NOTHING")
_COPY_STEPS = f"COPY steps (run_id, {', '.join(STEP_COLUMNS)}) FROM STDIN"
_DIALECT: dict[str, str] = {}
_GC_LOCK_SHARED = "SELECT pg_advisory_xact_lock_shared(hashtext('snapstate-gc'))"
_GC_LOCK = "SELECT pg_advisory_xact_lock(hashtext('snapstate-gc'))"


def dialect(sql: str) -> str:
    """The shared (SQLite-spelled) statement ``sql`` in PostgreSQL's spelling (cached)."""
    out = _DIALECT.get(sql)
    if out is None:
        out = (sql.replace("?", "%s").replace("instr(", "strpos(")
               .replace(" IS NOT s.function", " IS DISTINCT FROM s.function"))
        _DIALECT[sql] = out
    return out


class _Postgres:
    """What both engines share: the connection, dialect, and the answers that differ."""

    _conn: Any
    location: str

    def has_trace_chunks(self) -> bool:
        return True

    def has_seal_column(self) -> bool:
        """Whether ``runs.seal`` exists (store version 2; a version-1 store read as it is)."""
        known = getattr(self, "_seal_column", None)
        if known is None:
            known = self._seal_column = bool(self._run(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = %s"
                " AND table_name = 'runs' AND column_name = 'seal'", (SCHEMA_NAME,),
                translate=False))
        return known

    def check_storage(self) -> str | None:
        return None  # PostgreSQL keeps its own pages consistent

    def _has_leases(self) -> bool:
        return bool(self._run("SELECT to_regclass('leases') IS NOT NULL", ())[0][0])

    def blob_chain(self, key: bytes, max_depth: int, *, head_only: bool = False) -> list[tuple]:
        return self._run(_HEAD_CHAIN if head_only else _FULL_CHAIN,
                         {"key": key, "depth": max_depth}, translate=False)

    def _run(self, sql: str, params: Any, *, translate: bool = True) -> list[tuple]:
        raise NotImplementedError


class PostgresReadEngine(_Postgres, RunQueries, StepQueries, BlobQueries, ChunkQueries,
                         EffectQueries, LeaseQueries):
    """Read access to the store at ``url`` (thread-safe: one lock around the connection)."""

    def __init__(self, url: str) -> None:
        self.location = self.path = redacted(url)
        self._conn = connect(url, create=False)
        self._lock = threading.RLock()
        self._snapshots = 0

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self._run(sql, params)

    def _run(self, sql: str, params: Any, *, translate: bool = True) -> list[tuple]:
        with self._lock:
            if self._conn is None:
                raise TimelineError(self.location, "store is closed")
            try:
                return self._conn.execute(dialect(sql) if translate else sql, params).fetchall()
            except errors() as exc:
                raise TimelineError(self.location, f"store query failed ({exc})") from None

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """One REPEATABLE READ, READ ONLY transaction for the block (nested blocks share it)."""
        with self._lock:
            if self._conn is None:
                raise TimelineError(self.location, "store is closed")
            self._snapshots += 1
            if self._snapshots == 1:
                self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        finally:
            with self._lock:
                self._snapshots -= 1
                if self._snapshots == 0 and self._conn is not None:
                    try:
                        self._conn.execute("ROLLBACK")  # read only: nothing to keep
                    except errors():
                        pass

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class PostgresWriteEngine(_Postgres, RunWrites, StepWrites, BlobWrites, ChunkWrites,
                          EffectWrites, LeaseWrites, RunQueries, StepQueries, BlobQueries,
                          ChunkQueries, EffectQueries, LeaseQueries):
    """Write access to the store at ``url``, created on first use. Not thread-safe: the writer
    above it holds its own lock. Raises the driver's errors on failures after opening (the
    recorder turns those into a warning)."""

    def __init__(self, url: str) -> None:
        self.location = self.path = redacted(url)
        self._conn = connect(url, create=True)
        self.write_errors = errors()

    def check_place(self) -> None:
        """Nothing to check: a database does not move."""

    @staticmethod
    def describe_failure(exc: BaseException) -> str:
        """A failed write in words (the driver's first line)."""
        return f"a write failed ({(str(exc).strip().splitlines() or [type(exc).__name__])[0]})"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(dialect(sql), params)

    def executemany(self, sql: str, rows: Any) -> Any:
        cursor = self._conn.cursor()
        cursor.executemany(dialect(sql), list(rows))
        return cursor

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.execute(sql, params).fetchall()

    def _run(self, sql: str, params: Any, *, translate: bool = True) -> list[tuple]:
        return self._conn.execute(dialect(sql) if translate else sql, params).fetchall()

    @contextlib.contextmanager
    def transaction(self, *, immediate: bool = False) -> Iterator[PostgresWriteEngine]:
        """One transaction; every writer's holds the gc lock shared (``exclude_writers``)."""
        with self._conn.transaction():
            self._conn.execute(_GC_LOCK_SHARED)
            yield self

    def exclude_writers(self) -> None:
        """Inside a transaction: wait until no other writer's transaction is open, and keep
        new ones waiting until this one ends (gc's sweep: no blob it found unreferenced is
        taken for stored by a writer meanwhile)."""
        self._conn.execute(_GC_LOCK)

    def next_run_seq(self) -> int:
        return int(self._conn.execute("SELECT nextval('run_seq')").fetchone()[0])

    def insert_blobs(self, rows: list[tuple[bytes, int, int, bytes]]) -> None:
        if rows:
            self._conn.execute(_INSERT_BLOBS, [list(column) for column in zip(*rows)])

    def insert_steps(self, rows: list[tuple]) -> None:
        """Step rows (``StepWrites.insert_steps``' contract) through ``COPY``: a step already
        there fails the batch, as an ``INSERT`` would."""
        if not rows:
            return
        with self._conn.cursor().copy(_COPY_STEPS) as copy:
            for row in rows:
                copy.write_row(row)

    def insert_run_rows(self, rows: list[dict[str, Any]]) -> None:
        """Many run rows at once through ``COPY`` (``RunWrites.insert_run_rows``' contract);
        the run numbering goes on after the highest ``seq`` inserted."""
        columns = [*RUN_COLUMNS, "seal"]
        with self._conn.cursor().copy(
                f"COPY runs ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([row.get(name) for name in columns])
        # the rows' seq numbers are taken: the next recorder's run comes after them
        self._conn.execute("SELECT setval('run_seq', greatest((SELECT max(seq) FROM runs),"
                           " (SELECT last_value FROM run_seq)))")

    def _worth_compacting(self) -> bool:
        return False

    def compact(self) -> None:
        """Nothing to do: PostgreSQL's autovacuum reclaims deleted rows."""

    def close(self, *, compact: bool = True) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
