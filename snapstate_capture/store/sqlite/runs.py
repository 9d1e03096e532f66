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
