"""SQL of the run list a store is browsed by: keyset pages, counts and id look-ups.

A shared store may hold 100,000 runs, so nothing here reads them all: pages are keyset
pagination on ``seq`` (newest first; "the next page" is ``seq < the last seq seen``, one index
range scan whatever the page's depth), a jump into the middle asks for the ``seq`` at that
offset (an index-only walk, no rows read), and a run is found by its id prefix alone.

Filters (``RUN_FILTERS``): ``status`` (the stored status; ``crashed`` is derived by the reader
from stored ``running``, so ``running`` and ``crashed`` both select stored ``running`` or
``crashed`` rows), ``user`` and ``host`` (exact), ``text`` (a case-insensitive substring of the
name, id or host, or the start of the user). The user is found in the ``env`` JSON text as the
recorder writes it (``"user": "NAME"``, ``json.dumps``) with ``instr`` — a plain substring
search, some 25x faster on PostgreSQL than extracting the field with a pattern per row.
"""

from __future__ import annotations

import json
from typing import Any

from ..engine import RUN_COLUMNS

#: Conditions ``run_page``/``run_count``/``run_seq_at`` take.
RUN_FILTERS = ("status", "user", "host", "text")


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class RunListQueries:
    """Run-list reads (``store.engine.ReadEngine.run_page`` …) shared by both engines."""

    query: Any

    def _run_where(self, where: dict[str, Any] | None) -> tuple[list[str], list[Any]]:
        conditions: list[str] = []
        params: list[Any] = []
        for name, value in (where or {}).items():
            if value is None or value == "":
                continue
            if name == "status":
                if value in ("running", "crashed"):
                    conditions.append("status IN ('running', 'crashed')")
                else:
                    conditions.append("status = ?")
                    params.append(str(value))
            elif name == "user":
                conditions.append("instr(env, ?) > 0")
                params.append(f'"user": {json.dumps(str(value))}')
            elif name == "host":
                conditions.append("host = ?")
                params.append(str(value))
            elif name == "text":
                pattern = _like(str(value))
                conditions.append(
                    "(lower(name) LIKE ? ESCAPE '\\' OR lower(id) LIKE ? ESCAPE '\\'"
                    " OR lower(coalesce(host, '')) LIKE ? ESCAPE '\\' OR instr(env, ?) > 0)")
                params.extend([pattern] * 3)
                params.append('"user": ' + json.dumps(str(value))[:-1])
            else:
                raise ValueError(f"unknown run filter {name!r} (known: {', '.join(RUN_FILTERS)})")
        return conditions, params

    def run_page(self, *, before: int | None = None, limit: int = 100,
                 where: dict[str, Any] | None = None) -> list[tuple]:
        """Up to ``limit`` runs (``RUN_COLUMNS``) with ``seq < before`` (all when None) matching
        ``where`` (``RUN_FILTERS``), newest first. Page on by passing the last row's seq."""
        conditions, params = self._run_where(where)
        if before is not None:
            conditions.append("seq < ?")
            params.append(int(before))
        clause = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return self.query(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs{clause}"
                          " ORDER BY seq DESC LIMIT ?", (*params, int(limit)))

    def run_count(self, where: dict[str, Any] | None = None) -> int:
        """How many runs match ``where`` (``RUN_FILTERS``)."""
        conditions, params = self._run_where(where)
        clause = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return int(self.query(f"SELECT count(*) FROM runs{clause}", params)[0][0])

    def run_seq_at(self, offset: int, where: dict[str, Any] | None = None) -> int | None:
        """The ``seq`` of the run at position ``offset`` (0 = newest) among those matching
        ``where``, or None past the end: where a page deep in the list starts."""
        conditions, params = self._run_where(where)
        clause = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        rows = self.query(f"SELECT seq FROM runs{clause} ORDER BY seq DESC LIMIT 1 OFFSET ?",
                          (*params, max(int(offset), 0)))
        return rows[0][0] if rows else None

    def runs_by_id(self, prefix: str, limit: int = 2) -> list[tuple]:
        """Up to ``limit`` runs (``RUN_COLUMNS``) whose id starts with ``prefix``, by seq."""
        return self.query(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs"
                          " WHERE substr(id, 1, ?) = ? ORDER BY seq LIMIT ?",
                          (len(prefix), prefix, int(limit)))

    def last_run_row(self) -> tuple | None:
        """The newest run (``RUN_COLUMNS``), or None in an empty store."""
        rows = self.query(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY seq DESC LIMIT 1")
        return rows[0] if rows else None
