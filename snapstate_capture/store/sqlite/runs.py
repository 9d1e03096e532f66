"""SQL of the ``runs`` table: the run list and the run header verify checks."""

from __future__ import annotations

from typing import Any

from ..engine import RUN_COLUMNS


class RunQueries:
    """Run reads of ``SQLiteReadEngine`` (``store.engine.ReadEngine``)."""

    query: Any
    has_trace_chunks: Any  # ``ChunkQueries.has_trace_chunks``

    def run_rows(self) -> list[tuple]:
        return self.query(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY seq")

    def run_header(self, run_id: str) -> tuple | None:
        rows = self.query(
            "SELECT name, started, pid, host, proc_start, entry, env, parent_run, parent_step,"
            " status, ended, error, step_count, chain_head, signature, key_id"
            " FROM runs WHERE id=?", (run_id,))
        return rows[0] if rows else None

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

    def next_run_seq(self) -> int:
        """The ``seq`` the next run gets (call inside an immediate transaction)."""
        return int(self.execute("SELECT coalesce(max(seq), 0) + 1 FROM runs").fetchone()[0])

    def insert_run(self, run_id: str, seq: int, header: dict[str, Any], signature: Any,
                   key_id: Any) -> None:
        """A new run with status ``running``; ``header``: name, started, pid, host, proc_start,
        entry, env, parent_run, parent_step (``trust.signing.header_digest``'s fields)."""
        self.execute(
            "INSERT INTO runs (id, seq, status, name, started, pid, host, proc_start,"
            " entry, env, parent_run, parent_step, signature, key_id)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, seq, "running", header["name"], header["started"], header["pid"],
             header["host"], header["proc_start"], header["entry"], header["env"],
             header["parent_run"], header["parent_step"], signature, key_id))

    def set_chain(self, run_id: str, step_count: int, head: bytes, signature: Any) -> None:
        """The run's step count, chain head and signature after new steps."""
        self.execute("UPDATE runs SET step_count=?, chain_head=?, signature=? WHERE id=?",
                     (step_count, head, signature, run_id))

    def set_run_signature(self, run_id: str, signature: Any, key_id: Any = None) -> None:
        """Replace the run's signature (and, when given, the key id it was made with)."""
        if key_id is None:
            self.execute("UPDATE runs SET signature=? WHERE id=?", (signature, run_id))
        else:
            self.execute("UPDATE runs SET signature=?, key_id=? WHERE id=?",
                         (signature, key_id, run_id))

    def finish_run(self, run_id: str, status: str, ended: float, error: str | None,
                   signature: Any) -> None:
        """The run's end: status, end time, error; the signature when there is a new one.
        Autocommitted (one statement)."""
        self.execute("UPDATE runs SET status=?, ended=?, error=?,"
                     " signature=coalesce(?, signature) WHERE id=?",
                     (status, ended, error, signature, run_id))

    def resume_row(self, run_id: str) -> tuple | None:
        """``(step_count, chain_head, signature, key_id, name, started, pid, host, proc_start,
        entry, env, parent_run, parent_step)``: what continuing a run needs."""
        return self.execute(
            "SELECT step_count, chain_head, signature, key_id, name, started, pid, host,"
            " proc_start, entry, env, parent_run, parent_step FROM runs WHERE id=?",
            (run_id,)).fetchone()

    def signed_state(self, run_id: str) -> tuple | None:
        """``(step_count, chain_head, status, effect count)`` of the run, or None."""
        row = self.execute("SELECT step_count, chain_head, status FROM runs WHERE id=?",
                           (run_id,)).fetchone()
        if row is None:
            return None
        count = self.execute("SELECT count(*) FROM effects WHERE run_id=?",
                             (run_id,)).fetchone()[0]
        return (*row, count)

    def delete_runs(self, run_ids: list[str]) -> None:
        """Remove whole runs: their steps, trace chunks, journal and row (``gc``)."""
        for run_id in run_ids:
            for table, column in (("steps", "run_id"), ("trace_chunks", "run_id"),
                                  ("effects", "run_id"), ("runs", "id")):
                self.execute(f"DELETE FROM {table} WHERE {column}=?", (run_id,))

    def insert_run_row(self, row: dict[str, Any]) -> None:
        """A run row exactly as another store holds it (``RUN_COLUMNS`` keys; ``push``/``pull``:
        its chain head and signature travel with it)."""
        self.execute(f"INSERT INTO runs ({', '.join(RUN_COLUMNS)})"
                     f" VALUES ({','.join('?' * len(RUN_COLUMNS))})",
                     [row[name] for name in RUN_COLUMNS])
