"""SQL of the ``runs`` table: the run list and the run header verify checks."""

from __future__ import annotations

from typing import Any

from ..engine import RUN_COLUMNS
from .run_list import RunListQueries


class RunQueries(RunListQueries):
    """Run reads of ``SQLiteReadEngine`` (``store.engine.ReadEngine``); the run list's pages
    and look-ups are ``RunListQueries``."""

    query: Any
    has_trace_chunks: Any  # ``ChunkQueries.has_trace_chunks``

    def run_rows(self) -> list[tuple]:
        return self.query(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY seq")

    def has_seal_column(self) -> bool:
        """Whether ``runs`` has the ``seal`` column (format 4; older files are read as they
        are)."""
        known = getattr(self, "_seal_column", None)
        if known is None:
            known = self._seal_column = any(
                row[1] == "seal" for row in self.query("PRAGMA table_info(runs)"))
        return known

    def run_header(self, run_id: str) -> tuple | None:
        seal = "seal" if self.has_seal_column() else "NULL"
        rows = self.query(
            "SELECT name, started, pid, host, proc_start, entry, env, parent_run, parent_step,"
            f" status, ended, error, step_count, chain_head, signature, key_id, seq, {seal}"
            " FROM runs WHERE id=?", (run_id,))
        return rows[0] if rows else None

    def orphan_counts(self) -> list[tuple[str, Any, int]]:
        """``(table, run_id, rows)`` for step, trace-chunk and journal rows whose run has no
        ``runs`` row (at most 100 per table)."""
        out = []
        for table in ("steps", "trace_chunks", "effects"):
            if table == "trace_chunks" and not self.has_trace_chunks():
                continue
            out.extend((table, run_id, count) for run_id, count in self.query(
                f"SELECT run_id, count(*) FROM {table} WHERE run_id NOT IN"
                " (SELECT id FROM runs) GROUP BY run_id LIMIT 100"))
        return out

    def step_bounds(self, run_id: str) -> tuple[Any, Any, Any]:
        rows = self.query(
            "SELECT step_count, (SELECT max(idx) + 1 FROM steps WHERE run_id=?) FROM runs"
            " WHERE id=?", (run_id, run_id))
        if not rows:
            return None, None, None
        count, present = rows[0]
        chunked = None
        if self.has_trace_chunks():
            chunked = self.query("SELECT max(first + count) FROM trace_chunks WHERE run_id=?",
                                 (run_id,))[0][0]
        return count, present, chunked

    def run_texts(self, run_id: str) -> list[Any]:
        """The JSON texts of a run that may name blobs: entry, env, every step's frames and
        extra, every journal value (``gc``'s roots)."""
        texts: list[Any] = []
        texts.extend((self.query("SELECT entry, env FROM runs WHERE id=?", (run_id,)) or [()])[0])
        for frames, extra in self.query("SELECT frames, extra FROM steps WHERE run_id=?",
                                        (run_id,)):
            texts.extend((frames, extra))
        texts.extend(value for (value,) in self.query(
            "SELECT value FROM effects WHERE run_id=?", (run_id,)))
        return texts


class RunWrites:
    """Run writes of ``SQLiteWriteEngine`` (``store.engine.WriteEngine``); each inside a
    ``transaction()`` unless said otherwise."""

    execute: Any
    executemany: Any

    def next_run_seq(self) -> int:
        """The ``seq`` the next run gets (call inside an immediate transaction)."""
        return int(self.execute("SELECT coalesce(max(seq), 0) + 1 FROM runs").fetchone()[0])

    def insert_run(self, run_id: str, seq: int, header: dict[str, Any], signature: Any,
                   key_id: Any, seal: Any = None) -> None:
        """A new run with status ``running``; ``header``: name, started, pid, host, proc_start,
        entry, env, parent_run, parent_step (``store.sealing.header_digest``'s fields)."""
        self.execute(
            "INSERT INTO runs (id, seq, status, name, started, pid, host, proc_start,"
            " entry, env, parent_run, parent_step, signature, key_id, seal)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, seq, "running", header["name"], header["started"], header["pid"],
             header["host"], header["proc_start"], header["entry"], header["env"],
             header["parent_run"], header["parent_step"], signature, key_id, seal))

    def set_chain(self, run_id: str, step_count: int, head: bytes | None, signature: Any,
                  seal: Any = None) -> None:
        """The run's step count and chain head after a change, with its new signature and seal
        (each kept as stored when None: an unsigned run, or one not re-sealed)."""
        self.execute("UPDATE runs SET step_count=?, chain_head=?, signature=coalesce(?, signature),"
                     " seal=coalesce(?, seal) WHERE id=?",
                     (step_count, head, signature, seal, run_id))

    def set_run_signature(self, run_id: str, signature: Any, key_id: Any = None,
                          seal: Any = None) -> None:
        """Replace the run's signature (and, when given, the key id it was made with and the
        seal that covers that key id)."""
        if key_id is None:
            self.execute("UPDATE runs SET signature=? WHERE id=?", (signature, run_id))
        else:
            self.execute("UPDATE runs SET signature=?, key_id=?, seal=coalesce(?, seal)"
                         " WHERE id=?", (signature, key_id, seal, run_id))

    def finish_run(self, run_id: str, status: str, ended: float, error: str | None,
                   signature: Any, seal: Any = None) -> None:
        """The run's end: status, end time, error; the signature and seal when there are new
        ones. Autocommitted (one statement)."""
        self.execute("UPDATE runs SET status=?, ended=?, error=?,"
                     " signature=coalesce(?, signature), seal=coalesce(?, seal) WHERE id=?",
                     (status, ended, error, signature, seal, run_id))

    def resume_row(self, run_id: str) -> tuple | None:
        """``(step_count, chain_head, signature, key_id, name, started, pid, host, proc_start,
        entry, env, parent_run, parent_step, seq, seal, status, ended, error)``: what
        continuing a run needs (its end too: the seal of an ended run covers it)."""
        return self.execute(
            "SELECT step_count, chain_head, signature, key_id, name, started, pid, host,"
            " proc_start, entry, env, parent_run, parent_step, seq, seal, status, ended, error"
            " FROM runs WHERE id=?",
            (run_id,)).fetchone()

    def signed_state(self, run_id: str) -> tuple | None:
        """``(step_count, chain_head, status, effect count, seal)`` of the run, or None."""
        row = self.execute("SELECT step_count, chain_head, status, seal FROM runs WHERE id=?",
                           (run_id,)).fetchone()
        if row is None:
            return None
        count = self.execute("SELECT count(*) FROM effects WHERE run_id=?",
                             (run_id,)).fetchone()[0]
        return (*row[:3], count, row[3])

    def delete_runs(self, run_ids: list[str]) -> None:
        """Remove whole runs: their steps, trace chunks, journal and row (``gc``)."""
        for run_id in run_ids:
            for table, column in (("steps", "run_id"), ("trace_chunks", "run_id"),
                                  ("effects", "run_id"), ("runs", "id")):
                self.execute(f"DELETE FROM {table} WHERE {column}=?", (run_id,))

    def insert_run_row(self, row: dict[str, Any]) -> None:
        """A run row exactly as another store holds it (``RUN_COLUMNS`` keys, and ``seal``
        when the run has one; ``push``/``pull``: its chain head and signature travel with it,
        its seal is made anew for its place in this store)."""
        columns = [*RUN_COLUMNS, "seal"]
        self.execute(f"INSERT INTO runs ({', '.join(columns)})"
                     f" VALUES ({','.join('?' * len(columns))})",
                     [row.get(name) for name in columns])

    def insert_run_rows(self, rows: list[dict[str, Any]]) -> None:
        """Many run rows at once (``insert_run_row``'s shape; one batched statement): how a
        fixture or an import fills a store with many runs."""
        columns = [*RUN_COLUMNS, "seal"]
        self.executemany(f"INSERT INTO runs ({', '.join(columns)})"
                         f" VALUES ({','.join('?' * len(columns))})",
                         [[row.get(name) for name in columns] for row in rows])
