"""SQL of the ``blobs`` table: content-addressed, encoded rows (``store.blobs``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..hashing import DIGEST_SIZE

#: One delta chain in one query: ``blobs`` rows from ``?1`` down through its delta bases. A
#: row is a delta when its codec, without the manifest bit, is 3 or 4 (``store.blobs``), and its
#: base key is its data's first 16 bytes. ``{data}`` is the data column or a prefix of it.
_CHAIN_SQL = (
    "WITH RECURSIVE chain(hash, codec, size, data, depth) AS ("
    " SELECT hash, codec, size, data, 0 FROM blobs WHERE hash = ?1"
    " UNION ALL"
    " SELECT b.hash, b.codec, b.size, b.data, chain.depth + 1 FROM chain"
    " JOIN blobs AS b ON b.hash = substr(chain.data, 1, 16)"
    " WHERE typeof(chain.codec) = 'integer' AND (chain.codec & ~16) IN (3, 4)"
    " AND typeof(chain.data) = 'blob' AND chain.depth < ?2)"
    " SELECT hash, codec, size, {data} FROM chain")
_FULL_CHAIN = _CHAIN_SQL.format(data="data")
_HEAD_CHAIN = _CHAIN_SQL.format(data=f"substr(data, 1, {DIGEST_SIZE})")


class BlobQueries:
    """Blob reads of ``SQLiteReadEngine`` (``store.engine.ReadEngine``)."""

    query: Any

    def blob_row(self, key: bytes) -> tuple | None:
        rows = self.query("SELECT codec, size, data FROM blobs WHERE hash=?", (key,))
        return rows[0] if rows else None

    def blob_chain(self, key: bytes, max_depth: int, *, head_only: bool = False) -> list[tuple]:
        return self.query(_HEAD_CHAIN if head_only else _FULL_CHAIN, (key, max_depth))

    def blob_rows(self, keys: Sequence[bytes]) -> list[tuple]:
        if not keys:
            return []
        marks = ",".join("?" * len(keys))
        return self.query(f"SELECT hash, codec, size, data FROM blobs WHERE hash IN ({marks})",
                          list(keys))

    def blob_sizes(self, keys: Sequence[bytes]) -> list[tuple[bytes, int]]:
        if not keys:
            return []
        marks = ",".join("?" * len(keys))
        return self.query(f"SELECT hash, size FROM blobs WHERE hash IN ({marks})", list(keys))

    def blob_keys_after(self, key: bytes, limit: int) -> list[Any]:
        return [raw for (raw,) in self.query(
            "SELECT hash FROM blobs WHERE hash > ? ORDER BY hash LIMIT ?", (key, limit))]

    def stored_blob_sizes(self) -> list[tuple[bytes, int]]:
        """``(hash, stored bytes)`` of every blob (``gc``'s sweep)."""
        return self.query("SELECT hash, length(data) FROM blobs")


class BlobWrites:
    """Blob writes of ``SQLiteWriteEngine`` (inside a ``transaction()``)."""

    execute: Any
    executemany: Any

    def insert_blobs(self, rows: list[tuple[bytes, int, int, bytes]]) -> None:
        """``(hash, codec, size, data)`` rows; a key already stored is left as it is."""
        self.executemany("INSERT OR IGNORE INTO blobs (hash, codec, size, data) VALUES (?,?,?,?)",
                         rows)

    def delete_blobs(self, keys: list[bytes]) -> None:
        """Remove the blobs ``keys`` (``gc``: nothing reachable refers to them)."""
        for start in range(0, len(keys), 500):
            self.executemany("DELETE FROM blobs WHERE hash=?",
                             [(key,) for key in keys[start:start + 500]])
