"""SQL of the ``effects`` table: each run's effect journal."""

from __future__ import annotations

from typing import Any

from ..engine import EFFECT_COLUMNS

_EFFECTS = ", ".join(EFFECT_COLUMNS)


class EffectQueries:
    """Effect-journal reads of ``SQLiteReadEngine`` (``store.engine.ReadEngine``)."""

    query: Any

    def effect_rows(self, run_id: str, *, after_seq: int = -1, limit: int | None = None,
                    max_step: int | None = None) -> list[tuple]:
        sql = f"SELECT {_EFFECTS} FROM effects WHERE run_id=? AND seq>?"
        params: list[Any] = [run_id, after_seq]
        if max_step is not None:
            sql += " AND step<=?"
            params.append(max_step)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return self.query(sql, params)


class EffectWrites:
    """Effect-journal writes of ``SQLiteWriteEngine`` (inside a ``transaction()``)."""

    execute: Any

    def insert_effect(self, run_id: str, fields: dict[str, Any]) -> None:
        """One journal row; ``fields`` in ``EFFECT_COLUMNS`` order (``value`` as JSON text)."""
        self.execute(f"INSERT INTO effects (run_id, {_EFFECTS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                     (run_id, *(fields[name] for name in EFFECT_COLUMNS)))
