"""SQL of the ``steps`` table: one row per checkpoint, effect and ``@step`` step."""

from __future__ import annotations

from typing import Any

from ..engine import STEP_COLUMNS, SUMMARY_COLUMNS

_STEPS = ", ".join(STEP_COLUMNS)
_SUMMARIES = ", ".join(SUMMARY_COLUMNS)
_EQUAL_FILTERS = {"kind": "s.kind", "function": "s.function", "label": "s.label",
                  "thread": "s.thread"}


def step_filter(where: dict[str, Any]) -> tuple[tuple[str, str], list[Any]]:
    """Build (join, conditions) SQL and parameters for ``find_step``/``matching_steps``
    (the conditions of ``store.engine.STEP_CONDITIONS``); ``TypeError`` for an unknown one."""
    join, conds, params = "", [], []
    for name, value in where.items():
        if value is None:
            continue
        if name in _EQUAL_FILTERS:
            conds.append(f"{_EQUAL_FILTERS[name]}=?")
            params.append(value)
        elif name == "max_depth":
            conds.append("s.depth<=?")
            params.append(int(value))
        elif name == "text":
            conds.append("instr(lower(coalesce(s.function,'') || ' ' || coalesce(s.filename,'')"
                         " || ' ' || coalesce(s.label,'')), ?) > 0")
            params.append(str(value).lower())
        elif name == "new_stretch":
            if value:
                join = " LEFT JOIN steps p ON p.run_id=s.run_id AND p.idx=s.idx-1"
                conds.append("(p.idx IS NULL OR p.function IS NOT s.function"
                             " OR p.depth!=s.depth)")
        else:
            raise TypeError(f"unknown step condition {name!r}")
    return (join, "".join(f" AND {c}" for c in conds)), params


class StepQueries:
    """Step reads of ``SQLiteReadEngine`` (``store.engine.ReadEngine``)."""

    query: Any

    def step_row(self, run_id: str, index: int) -> tuple | None:
        rows = self.query(f"SELECT {_STEPS} FROM steps WHERE run_id=? AND idx=?",
                          (run_id, index))
        return rows[0] if rows else None

    def step_rows(self, run_id: str, start: int, stop: int) -> list[tuple]:
        return self.query(f"SELECT {_STEPS} FROM steps WHERE run_id=? AND idx>=? AND idx<?"
                          " ORDER BY idx", (run_id, start, stop))

    def summary_rows(self, run_id: str, start: int, stop: int) -> list[tuple]:
        return self.query(f"SELECT {_SUMMARIES} FROM steps WHERE run_id=? AND idx>=? AND idx<?"
                          " ORDER BY idx", (run_id, start, stop))

    def find_step(self, run_id: str, after: int, backward: bool,
                  where: dict[str, Any]) -> int | None:
        sql, params = step_filter(where)
        op, order = ("<", "DESC") if backward else (">", "ASC")
        rows = self.query(
            f"SELECT s.idx FROM steps s{sql[0]} WHERE s.run_id=? AND s.idx{op}?{sql[1]}"
            f" ORDER BY s.idx {order} LIMIT 1", (run_id, after, *params))
        return int(rows[0][0]) if rows else None

    def matching_steps(self, run_id: str, start: int, stop: int,
                       where: dict[str, Any]) -> list[int]:
        sql, params = step_filter(where)
        rows = self.query(
            f"SELECT s.idx FROM steps s{sql[0]} WHERE s.run_id=? AND s.idx>=? AND s.idx<?{sql[1]}"
            " ORDER BY s.idx", (run_id, start, stop, *params))
        return [int(row[0]) for row in rows]

    def frame_key_rows(self, run_id: str, start: int, stop: int) -> list[tuple[int, Any]]:
        return self.query("SELECT idx, frames FROM steps WHERE run_id=? AND idx>=? AND idx<?"
                          " ORDER BY idx", (run_id, start, stop))

    def state_rows(self, run_id: str, start: int, stop: int) -> list[tuple[int, Any, Any]]:
        return self.query("SELECT idx, frames, extra FROM steps WHERE run_id=? AND idx>=?"
                          " AND idx<? ORDER BY idx", (run_id, start, stop))

    def changed_totals(self, run_id: str, start: int, stop: int,
                       buckets: int) -> list[tuple[int, int]]:
        span = max(stop - start, 1)
        return self.query("SELECT ((idx - ?) * ?) / ?, sum(n_changed) FROM steps"
                          " WHERE run_id=? AND idx>=? AND idx<? GROUP BY 1",
                          (start, buckets, span, run_id, start, stop))

    def distinct_frames(self, run_id: str) -> list[Any]:
        return [frames for (frames,) in self.query(
            "SELECT DISTINCT frames FROM steps WHERE run_id=?", (run_id,))]

    def step_row_count(self, run_id: str, start: int = 0) -> int:
        return int(self.query("SELECT count(*) FROM steps WHERE run_id=? AND idx>=?",
                              (run_id, start))[0][0])

    def chain_rows(self, run_id: str, after: int, stop: int, limit: int) -> list[tuple]:
        return self.query(
            "SELECT idx, kind, label, wall, mono, thread, task, frames, extra, errors,"
            " function, filename, lineno, depth, n_changed, hash"
            " FROM steps WHERE run_id=? AND idx>? AND idx<? ORDER BY idx LIMIT ?",
            (run_id, after, stop, limit))


_INSERT_STEP = (
    "INSERT INTO steps (run_id, idx, kind, label, wall, mono, thread, task, function, filename,"
    " lineno, depth, frames, extra, errors, n_changed, hash)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")


class StepWrites:
    """Step writes of ``SQLiteWriteEngine`` (inside a ``transaction()``)."""

    execute: Any
    executemany: Any

    def insert_steps(self, rows: list[tuple]) -> None:
        """Step rows: ``(run_id, *STEP_COLUMNS)`` each."""
        self.executemany(_INSERT_STEP, rows)
