"""SQL of the ``trace_chunks`` table: traced steps stored a chunk at a time (``store.chunks``)."""

from __future__ import annotations

from typing import Any


class ChunkQueries:
    """Trace-chunk reads of ``SQLiteReadEngine`` (``store.engine.ReadEngine``)."""

    query: Any
    _chunks_table: bool | None = None

    def has_trace_chunks(self) -> bool:
        if self._chunks_table is None:  # files of format 1 have no such table
            self._chunks_table = bool(self.query(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='trace_chunks'"))
        return self._chunks_table

    def run_has_chunks(self, run_id: str) -> bool:
        return self.has_trace_chunks() and bool(self.query(
            "SELECT 1 FROM trace_chunks WHERE run_id=? LIMIT 1", (run_id,)))

    def chunk_data(self, run_id: str, first: int) -> Any:
        rows = self.query("SELECT data FROM trace_chunks WHERE run_id=? AND first=?",
                          (run_id, first))
        return rows[0][0] if rows else None

    def chunk_at(self, run_id: str, index: int) -> tuple[int, int] | None:
        rows = self.query("SELECT first, count FROM trace_chunks WHERE run_id=? AND first<=?"
                          " ORDER BY first DESC LIMIT 1", (run_id, index))
        return rows[0] if rows else None

    def chunks_overlapping(self, run_id: str, start: int, stop: int) -> list[tuple[int, int]]:
        return self.query("SELECT first, count FROM trace_chunks WHERE run_id=? AND first<?"
                          " AND first+count>? ORDER BY first", (run_id, stop, start))

    def chunk_page(self, run_id: str, start: int, stop: int, bound: int, limit: int, *,
                   backward: bool = False) -> list[tuple]:
        if backward:
            return self.query(
                "SELECT first, count, data, hash FROM trace_chunks WHERE run_id=? AND first<?"
                " AND first+count>? ORDER BY first DESC LIMIT ?",
                (run_id, min(bound, stop), start, limit))
        return self.query(
            "SELECT first, count, data, hash FROM trace_chunks WHERE run_id=? AND first>?"
            " AND first<? AND first+count>? ORDER BY first LIMIT ?",
            (run_id, bound, stop, start, limit))

    def run_chunk_data(self, run_id: str) -> list[Any]:
        """The data of every chunk of the run (``gc``: blob keys inside traced steps)."""
        if not self.has_trace_chunks():
            return []
        return [data for (data,) in self.query(
            "SELECT data FROM trace_chunks WHERE run_id=?", (run_id,))]


class ChunkWrites:
    """Trace-chunk writes of ``SQLiteWriteEngine`` (inside a ``transaction()``)."""

    execute: Any

    def insert_chunk(self, run_id: str, first: int, count: int, data: bytes,
                     digest: bytes) -> None:
        """One chunk of ``count`` traced steps from step ``first``; ``digest``: the chain hash."""
        self.execute("INSERT INTO trace_chunks (run_id, first, count, data, hash)"
                     " VALUES (?,?,?,?,?)", (run_id, first, count, data, digest))

    def chunk_count(self) -> int:
        """How many trace chunks the file holds."""
        return int(self.execute("SELECT count(*) FROM trace_chunks").fetchone()[0])
