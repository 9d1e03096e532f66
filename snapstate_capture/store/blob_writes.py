"""Blobs as the writer stores them: each once, as a delta against a recent version if it can.

``BlobWrites`` is the part of ``TimelineWriter`` (``writer.py``) that writes blobs: a key the
writer wrote already is skipped (``has_blob``, in memory); a blob whose ``StepRecord.bases``
names a recently written version is encoded as a delta against it (``blobs.encode``), within
the delta-chain depth ``blobs.max_chain`` allows; recently written blobs are kept as delta bases
up to ``RECENT_LIMIT`` bytes (the oldest dropped first). It uses the writer's
``engine``, ``_lock`` and ``_transaction`` and the bookkeeping the writer's constructor sets up:
``_known`` (keys written), ``_pending`` (keys queued in the open transaction, which
``_transaction`` forgets again if it is rolled back), ``_recent`` and ``_recent_bytes``.
"""

from __future__ import annotations

from . import blobs

#: Bytes of recently written blobs kept as delta bases, and the largest blob kept.
RECENT_LIMIT = 32 * 1024 * 1024
RECENT_MAX_BLOB = 4 * 1024 * 1024


class BlobWrites:
    """Writing blobs, for ``TimelineWriter`` (module docstring)."""

    def has_blob(self, key: str) -> bool:
        """True when blob ``key`` (hex) was written by this writer already (cheap, in memory)."""
        return key in self._known

    def _insert_blobs(self, items: dict[str, bytes], manifests: set[str] | frozenset = frozenset(),
                      bases: dict[str, str] | None = None, into: list[tuple] | None = None
                      ) -> None:
        """Queue the blobs not yet in the file (as deltas where a base is known), inside a
        ``_transaction``, which forgets them again if it is rolled back; ``into``: add their
        rows there for the caller to insert (later in the same transaction)."""
        rows = []
        for key, data in items.items():
            if key in self._known:
                continue
            base = None
            depth = 0
            base_key = bases.get(key) if bases else None
            if base_key is not None:
                known = self._recent.get(base_key)
                if known is not None and known[1] < blobs.max_chain(len(data)):
                    base = (bytes.fromhex(base_key), known[0])
            digest, codec, stored = blobs.encode(data, base, manifest=key in manifests,
                                                 key=bytes.fromhex(key))
            if blobs.delta_base(codec, stored) is not None:
                depth = self._recent[base_key][1] + 1  # type: ignore[index]
            rows.append((digest, codec, len(data), stored))
            self._known.add(key)
            self._pending.append(key)
            self._remember(key, data, depth)
        if into is not None:
            into.extend(rows)
        elif rows:
            self.engine.insert_blobs(rows)

    def _remember(self, key: str, data: bytes, depth: int) -> None:
        """Keep ``data`` as a possible delta base (only blobs small enough to be worth it)."""
        if len(data) > RECENT_MAX_BLOB:
            return
        self._recent[key] = (data, depth)
        self._recent_bytes += len(data)
        while self._recent_bytes > RECENT_LIMIT:
            _, (old, _) = self._recent.popitem(last=False)
            self._recent_bytes -= len(old)

    def add_stored_blobs(self, rows: list[tuple[bytes, int, int, bytes]]) -> None:
        """Insert blob rows exactly as another file stores them (``(hash, codec, size, data)``;
        deltas need their bases among them). For ``export``; one transaction."""
        with self._lock:
            with self._transaction() as engine:
                engine.insert_blobs(rows)
            self._known.update(row[0].hex() for row in rows)
