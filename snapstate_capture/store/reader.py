"""The reader API: ``open_timeline(path)`` and the read-only objects it hands out.

Shape (DESIGN.md "Public interface")::

    Timeline.runs[i]                -> Run   (.id .name .status .parent .entry .env .error)
    Run.steps                       -> Steps (lazy: len, [i], [-1], [a:b]; never loads the file)
    Run.steps[i]                    -> Step  (.index .kind .label .wall_time .mono_time .thread
                                              .task .function .filename .lineno .frames .extra
                                              .errors .n_changed)
    Step.frames[j]                  -> Frame (.function .filename .lineno .source .locals)
    Frame.locals[name]              -> Value (.type_name .repr .preview .is_placeholder
                                              .has_payload .load(trust=False))

Nothing here writes to the file: a run whose recorder died is *reported* ``crashed``.
Every blob read is checked against its hash (``IntegrityError`` when it does not match).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, overload

from ..errors import IntegrityError, NotFoundError, TimelineError
from . import blobs, previews, sanitize
from .connection import DB_ERRORS, db_error_text, open_for_reading
from .leases import Lease, read_leases
from .records import Frame, PayloadGate, Step, StepSummary, Value
from .writer import process_start_marker

__all__ = ["Frame", "ParentRef", "PayloadGate", "Run", "Step", "StepSummary", "Steps", "Timeline",
           "Value", "open_timeline"]

#: Statuses of a run that stopped at a durable wait, to be continued (``capture/waits.py``).
PAUSED = ("waiting", "sleeping")

_STEP_COLUMNS = ("idx, kind, label, wall, mono, thread, task, function, filename, lineno, depth,"
                 " frames, extra, errors, n_changed, hash")
#: A blob's row and its delta bases' rows, down the chain (at most ``?2`` links below it): a
#: row is a delta when its codec, without the manifest bit, is 3 or 4 (``blobs.py``), and its
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
_SUMMARY_COLUMNS = "idx, kind, label, wall, function, filename, lineno, depth, n_changed, thread, task"


class Timeline:
    """An open timeline file (read-only). Use as a context manager or call ``close()``.

    ``runs`` lists the runs in creation order; ``run(id_prefix)`` finds one by a unique id prefix
    (None or "" gives the last run). Thread-safe: one lock around the connection.
    Raises ``TimelineError`` (naming the file) when the file is missing, not a timeline, damaged
    or from a newer SnapState.
    """

    def __init__(self, path: str | os.PathLike[str], *, trust: bool = False,
                 gate: PayloadGate | None = None) -> None:
        self.path = Path(path)
        self.trust = trust
        #: Decides whether payloads may be unpickled (``store.records.PayloadGate``); None: never.
        self.gate = gate
        self._conn: sqlite3.Connection | None = open_for_reading(self.path)
        self._lock = threading.RLock()
        self._json_cache: OrderedDict[str, Any] = OrderedDict()
        self._runs: list[Run] | None = None
        self._leases: dict[str, Lease] | None = None
        self._chunk_steps: Any = None
        self._blobs = blobs.BlobSource(self._fetch_blob, fetch_chain=self._fetch_chain)

    @property
    def chunk_steps(self) -> Any:
        """Reader of the traced steps stored in chunks (``store.chunk_reader.ChunkSteps``)."""
        if self._chunk_steps is None:
            from .chunk_reader import ChunkSteps

            self._chunk_steps = ChunkSteps(self)
        return self._chunk_steps

    def __enter__(self) -> Timeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file; further reads raise ``TimelineError``."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run one read query and return all rows (internal to snapstate: the SQL is ours)."""
        with self._lock:
            if self._conn is None:
                raise TimelineError(self.path, "timeline is closed")
            try:
                return self._conn.execute(sql, params).fetchall()
            except DB_ERRORS as exc:
                raise TimelineError(self.path, f"damaged timeline ({db_error_text(exc)})") \
                    from None

    @property
    def runs(self) -> list[Run]:
        """All runs, oldest first (re-read by ``refresh()``)."""
        if self._runs is None:
            self.refresh()
        assert self._runs is not None
        return self._runs

    def refresh(self) -> None:
        """Re-read the run list and step counts (for following a file still being recorded)."""
        rows = self.query(
            "SELECT id, seq, name, status, started, ended, pid, host, proc_start, entry, env,"
            " parent_run, parent_step, error, step_count, chain_head, signature, key_id"
            " FROM runs ORDER BY seq")
        self._runs = [Run(self, row) for row in rows]
        self._leases = None

    def leases(self) -> dict[str, Lease]:
        """The resume leases of the file by run id (``store/leases.py``), read once per
        ``refresh()``; empty for files of format 3 and older."""
        if self._leases is None:
            self._leases = read_leases(self.query)
        return self._leases

    def run(self, run_id: str | None = None) -> Run:
        """Return the run whose id starts with ``run_id`` (the last run when None or empty).

        Raises ``NotFoundError`` when no run or more than one run matches, or the file has none.
        """
        runs = self.runs
        if not runs:
            raise NotFoundError(self.path, "holds no runs")
        if not run_id:
            return runs[-1]
        matches = [r for r in runs if r.id.startswith(run_id.lower())]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise NotFoundError(self.path, f"no run with id {run_id!r}")
        raise NotFoundError(self.path, f"run id {run_id!r} is ambiguous ({len(matches)} runs)")

    def blob(self, key: str) -> bytes:
        """Return the bytes of blob ``key`` (hex), checked against its hash.

        Raises ``NotFoundError`` if absent, ``IntegrityError`` if the stored bytes do not match.
        """
        try:
            raw = bytes.fromhex(key)
        except (ValueError, TypeError):
            raise IntegrityError(self.path, f"malformed blob reference {key!r}") from None
        try:
            with self._lock:
                return self._blobs.content(raw)
        except blobs.BlobError as exc:
            if exc.missing:
                raise NotFoundError(self.path, f"missing blob {exc.key.hex()[:12]}") from None
            raise IntegrityError(self.path, f"blob {exc.key.hex()[:12]} is {exc}") from None

    def blob_problem(self, raw: bytes) -> str | None:
        """None when blob ``raw`` (binary key) decodes to its hash (a delta's base included;
        a manifest's pieces are blobs of their own), else the problem ("missing", "corrupt …")."""
        try:
            with self._lock:
                self._blobs.inner(raw)
        except blobs.BlobError as exc:
            return "missing" if exc.missing and exc.key == raw else str(exc)
        except (ValueError, OverflowError, MemoryError):
            return "corrupt (cannot decode)"
        return None

    def _fetch_blob(self, raw: bytes) -> tuple[int, int, bytes] | None:
        rows = self.query("SELECT codec, size, data FROM blobs WHERE hash=?", (raw,))
        return rows[0] if rows else None

    def _fetch_chain(self, raw: bytes) -> dict[bytes, tuple[int, int, bytes]]:
        """Rows of blob ``raw`` and of every delta base below it, in one query (a cold delta
        chain of 40 rows was 40 round trips)."""
        rows = self.query(_CHAIN_SQL.format(data="data"), (raw, blobs.MAX_NESTING))
        return {bytes(h): (codec, size, data) for h, codec, size, data in rows
                if isinstance(h, bytes)}

    def check_size(self, key: str, limit: int) -> None:
        """Raise ``IntegrityError`` when blob ``key``, or any delta base it is decoded against,
        claims more than ``limit`` bytes: frame records, previews and source are never that big,
        and a hostile file's zlib bomb must not be inflated to find out (``sanitize.MAX_RECORD``)."""
        try:
            raw = bytes.fromhex(key)
        except (ValueError, TypeError):
            raise IntegrityError(self.path, f"malformed blob reference {key!r}") from None
        # A delta row is decoded against its base, so every base down the chain must fit too:
        # only sizes and the 16-byte base reference are read (one query), nothing is inflated.
        rows = self.query(_CHAIN_SQL.format(data=f"substr(data, 1, {blobs.DIGEST_SIZE})"),
                          (raw, blobs.MAX_NESTING))
        for _, codec, size, head in rows:
            if not isinstance(size, int) or size > limit:
                raise IntegrityError(self.path, f"blob {key[:12]} is too large for what it holds")
            if not isinstance(codec, int) or not isinstance(head, bytes):
                return  # malformed: the full read reports it

    def blob_sizes(self, keys: Sequence[str]) -> dict[str, int]:
        """Uncompressed sizes in bytes of the blobs ``keys`` (hex) that exist, in one query
        (lets a reader decide how to load a value before reading it)."""
        raws = []
        for key in keys:
            try:
                raws.append(bytes.fromhex(key))
            except (ValueError, TypeError):
                continue
        if not raws:
            return {}
        marks = ",".join("?" * len(raws))
        rows = self.query(f"SELECT hash, size FROM blobs WHERE hash IN ({marks})", raws)
        return {bytes(h).hex(): size for h, size in rows
                if isinstance(h, bytes) and isinstance(size, int) and size >= 0}

    def json_blob(self, key: str) -> Any:
        """Return blob ``key`` decoded as JSON, through a small LRU cache."""
        with self._lock:
            if key in self._json_cache:
                self._json_cache.move_to_end(key)
                return self._json_cache[key]
        self.check_size(key, sanitize.MAX_RECORD)
        try:
            value = json.loads(self.blob(key))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise IntegrityError(self.path, f"blob {key[:12]} is not valid JSON") from None
        with self._lock:
            self._json_cache[key] = value
            if len(self._json_cache) > 4096:
                self._json_cache.popitem(last=False)
        return value


    def preview_blob(self, key: str) -> Any:
        """Return the preview stored under ``key``, its children joined (``store/previews.py``)."""
        return previews.join(self.json_blob(key), self.json_blob)


def open_timeline(path: str | os.PathLike[str], *, trust: bool = False) -> Timeline:
    """Open the timeline file at ``path`` for reading.

    ``trust=True`` allows ``Value.load()`` to unpickle payloads from this file (it runs code from
    the file; see DESIGN.md "Trust"). Raises ``TimelineError`` naming the file and the problem.
    """
    return Timeline(path, trust=trust)


@dataclass(frozen=True)
class ParentRef:
    """Where a fork branches from: the parent ``run_id`` and the ``step`` index."""

    run_id: str
    step: int


_loads = sanitize.loads_bounded


class Run:
    """One run in a timeline (read-only view of a ``runs`` row)."""

    def __init__(self, timeline: Timeline, row: tuple) -> None:
        (self.id, self.seq, self.name, stored_status, self.started, self.ended, self.pid,
         self.host, self._proc_start, entry, env, parent_run, parent_step, error,
         self.step_count, self.chain_head, self.signature, self.key_id) = \
            sanitize.run_row(timeline.path, row)
        self.timeline = timeline
        self.stored_status: str = stored_status
        self.entry: dict[str, Any] = _loads(entry, {}, kind=dict)
        self.env: dict[str, Any] = _loads(env, {}, kind=dict)
        ended_with: dict[str, Any] | None = _loads(error, None, kind=dict)
        paused = stored_status in PAUSED
        #: The exception that ended a ``failed`` run (``type``, ``message``, …), else None.
        self.error: dict[str, Any] | None = None if paused else ended_with
        #: What a ``waiting`` or ``sleeping`` run stopped for (``capture/waits.py``):
        #: ``{"pause": "wait"|"sleep", "name", "prompt", "schema", "reason", "due", "step",
        #: "at"}``; None for other runs.
        self.pause: dict[str, Any] | None = ended_with if paused else None
        self.parent = ParentRef(parent_run, parent_step) if parent_run else None
        self.steps = Steps(self)

    def __repr__(self) -> str:
        return f"<Run {self.id[:8]} {self.name!r} {self.status} {self.step_count} steps>"

    @property
    def continued_as(self) -> str | None:
        """The id of the run that continues this one (answered its wait, woke it, resumed it
        after a crash), from the store's leases; None while nobody did."""
        lease = self.timeline.leases().get(self.id)
        return lease.continued_as if lease is not None else None

    @cached_property
    def status(self) -> str:
        """``running``, ``finished``, ``failed``, ``waiting``, ``sleeping`` or ``crashed``.

        A run stored as ``running`` whose recorder process is gone is reported ``crashed``
        (checked by pid and process start time on the same host; a run from another host
        stays ``running``).
        """
        if self.stored_status != "running":
            return self.stored_status
        if self.host != socket.gethostname() or not self.pid:
            return "running"
        marker = process_start_marker(self.pid)
        if marker is None or (self._proc_start and marker != self._proc_start):
            return "crashed"
        return "running"

    def source_files(self) -> dict[str, str]:
        """``{filename: source hash}`` for every file on the run's saved stacks (first seen
        wins); raises ``TimelineError`` when the file cannot be read."""
        timeline = self.timeline
        keys: dict[str, None] = {}
        for (frames,) in timeline.query("SELECT DISTINCT frames FROM steps WHERE run_id=?",
                                        (self.id,)):
            try:
                for key in json.loads(frames):
                    keys.setdefault(key, None)
            except (ValueError, TypeError):
                continue
        sources: dict[str, str] = {}
        for key in keys:
            record = timeline.json_blob(key)
            if not isinstance(record, dict):
                continue
            filename, source = record.get("filename"), record.get("source")
            if isinstance(filename, str) and isinstance(source, str):
                sources.setdefault(filename, source)
        return sources

    @property
    def duration(self) -> float | None:
        """Seconds from start to end (to the last step for unfinished runs), or None."""
        end = self.ended
        if end is None and len(self.steps):
            end = self.steps[-1].wall_time
        return None if end is None else max(end - self.started, 0.0)


class Steps(Sequence["Step"]):
    """The steps of one run: a lazy sequence, read from the file on demand.

    Supports ``len``, integer indexing (negative too) and slices; raises ``IndexError`` for an
    index out of range. ``len`` is re-read from the file each time, so it grows while the run is
    being recorded.
    """

    def __init__(self, run: Run) -> None:
        self.run = run

    def __len__(self) -> int:
        # Never more than the rows present: a crafted step count cannot promise 2**62 steps.
        timeline = self.run.timeline
        rows = timeline.query(
            "SELECT step_count, (SELECT max(idx) + 1 FROM steps WHERE run_id=?) FROM runs"
            " WHERE id=?", (self.run.id, self.run.id))
        if not rows:
            return 0
        count, present = rows[0]
        if timeline.chunk_steps.available:
            chunked = timeline.query("SELECT max(first + count) FROM trace_chunks"
                                     " WHERE run_id=?", (self.run.id,))[0][0]
            if isinstance(chunked, int) and (not isinstance(present, int) or chunked > present):
                present = chunked
        if not isinstance(count, int) or not isinstance(present, int):
            return 0
        return max(0, min(count, present))

    @overload
    def __getitem__(self, index: int) -> Step: ...
    @overload
    def __getitem__(self, index: slice) -> list[Step]: ...

    def __getitem__(self, index: int | slice) -> Step | list[Step]:
        if isinstance(index, slice):
            start, stop, stride = index.indices(len(self))
            if stride != 1:
                return [self[i] for i in range(start, stop, stride)]
            return self.range(start, stop)
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(f"step {index} out of range (run has {size} steps)")
        rows = self.run.timeline.query(
            f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id=? AND idx=?", (self.run.id, index))
        if not rows:
            traced = self.run.timeline.chunk_steps.step(self.run, index)
            if traced is None:
                raise IntegrityError(self.run.timeline.path, f"step {index} is missing")
            return traced
        return Step(self.run, rows[0])

    def range(self, start: int, stop: int) -> list[Step]:
        """Steps ``start`` … ``stop - 1`` in one query."""
        rows = self.run.timeline.query(
            f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id=? AND idx>=? AND idx<? ORDER BY idx",
            (self.run.id, start, stop))
        steps = [Step(self.run, row) for row in rows]
        if len(steps) < stop - start:  # the rest are traced steps stored in chunks
            steps.extend(self.run.timeline.chunk_steps.range(self.run, start, stop))
            steps.sort(key=lambda s: s.index)
        return steps

    # -- light reads for long lists (the inspector's timeline, navigation and search) ---------
    def summaries(self, start: int, stop: int) -> list[StepSummary]:
        """Light rows for steps ``start`` … ``stop - 1`` in one query (no frames, no JSON);
        traced steps stored in chunks are summarised from their decoded chunk."""
        rows = self.run.timeline.query(
            f"SELECT {_SUMMARY_COLUMNS} FROM steps WHERE run_id=? AND idx>=? AND idx<?"
            " ORDER BY idx", (self.run.id, start, stop))
        out = [StepSummary(*row) for row in rows]
        if len(out) < min(stop, len(self)) - max(start, 0):
            out.extend(_summary_of(step) for step in self._traced(start, stop))
            out.sort(key=lambda summary: summary.index)
        return out

    def _traced(self, start: int, stop: int) -> list[Step]:
        """The steps of ``start`` … ``stop - 1`` stored in trace chunks (none for most runs)."""
        return self.run.timeline.chunk_steps.range(self.run, start, stop)

    def _traced_matching(self, start: int, stop: int, where: dict[str, Any]) -> list[int]:
        """Indexes of traced steps in ``start`` … ``stop - 1`` matching ``where`` (see
        ``find``), checked in Python a chunk-sized block at a time."""
        found: list[int] = []
        block = 4096
        for first in range(max(start, 0), stop, block):
            rows = self.summaries(max(first - 1, 0), min(first + block, stop))
            by_index = {row.index: row for row in rows}
            for row in rows:
                if row.index >= first and _summary_matches(row, by_index.get(row.index - 1),
                                                           where):
                    found.append(row.index)
        return found

    def scan_traced_matches(self, start: int, stop: int, *, needle: str, blob: Any) -> Iterator:
        """Search steps ``start`` … ``stop - 1`` stored in trace chunks for ``needle``, a chunk at
        a time (``store.chunk_scan.scan_matches``: yields ``ChunkScan`` with ``(index, where)``;
        ``blob(name, ref)`` judges values stored as blobs)."""
        from .chunk_scan import scan_matches

        return scan_matches(self.run.timeline, self.run.id, start, stop, needle=needle,
                            blob=blob)

    def scan_traced_variable(self, position: int, function: str, name: str, start: int,
                             stop: int, *, backward: bool = False) -> Iterator:
        """Where one variable changes among steps ``start`` … ``stop - 1`` stored in trace
        chunks (``store.chunk_scan.scan_variable``: yields ``ChunkScan`` with ``(index, raw)``;
        ``store.chunk_reader.value_ref(raw)`` is the reader's value ref)."""
        from .chunk_scan import scan_variable

        return scan_variable(self.run.timeline, self.run.id, position, function, name, start,
                             stop, backward=backward)

    def has_traced(self) -> bool:
        """Whether some of these steps were recorded by the tracer (stored in chunks)."""
        chunk_steps = self.run.timeline.chunk_steps
        return chunk_steps.available and bool(self.run.timeline.query(
            "SELECT 1 FROM trace_chunks WHERE run_id=? LIMIT 1", (self.run.id,)))

    def find(self, after: int, *, backward: bool = False, **where: Any) -> int | None:
        """Index of the first step after ``after`` (before it when ``backward``) matching
        ``where``, or None. Conditions (all optional, combined with AND): ``kind``,
        ``function``, ``label``, ``thread`` (equal), ``max_depth`` (depth <= it), ``text``
        (case-insensitive substring of function, filename or label), ``new_stretch`` (True: the
        previous step ran a different function or depth — a new call of it). One SQL query.
        """
        sql, params = _step_filter(where)
        if self.has_traced():  # traced steps live in chunks: filter their summaries here
            hits = (self._traced_matching(0, after, where) if backward
                    else self._traced_matching(after + 1, len(self), where))
            return (hits[-1] if backward else hits[0]) if hits else None
        op, order = ("<", "DESC") if backward else (">", "ASC")
        rows = self.run.timeline.query(
            f"SELECT s.idx FROM steps s{sql[0]} WHERE s.run_id=? AND s.idx{op}?{sql[1]}"
            f" ORDER BY s.idx {order} LIMIT 1", (self.run.id, after, *params))
        return int(rows[0][0]) if rows else None

    def matching(self, start: int, stop: int, **where: Any) -> list[int]:
        """Indexes of steps ``start`` … ``stop - 1`` matching ``where`` (see ``find``)."""
        sql, params = _step_filter(where)
        if self.has_traced():
            return self._traced_matching(start, stop, where)
        rows = self.run.timeline.query(
            f"SELECT s.idx FROM steps s{sql[0]} WHERE s.run_id=? AND s.idx>=? AND s.idx<?{sql[1]}"
            " ORDER BY s.idx", (self.run.id, start, stop, *params))
        return [int(row[0]) for row in rows]

    def frame_keys(self, start: int, stop: int) -> list[tuple[int, list[str]]]:
        """``(index, frame-record hashes outermost first)`` for steps ``start`` … ``stop - 1``."""
        rows = self.run.timeline.query(
            "SELECT idx, frames FROM steps WHERE run_id=? AND idx>=? AND idx<? ORDER BY idx",
            (self.run.id, start, stop))
        return [(int(idx), _loads(frames, [])) for idx, frames in rows]

    def changed_totals(self, start: int, stop: int, buckets: int) -> list[int]:
        """Sum of ``n_changed`` per bucket: steps ``start`` … ``stop - 1`` cut into ``buckets``
        equal ranges (for a plot over the run). One grouped query."""
        span = max(stop - start, 1)
        rows = self.run.timeline.query(
            "SELECT ((idx - ?) * ?) / ?, sum(n_changed) FROM steps"
            " WHERE run_id=? AND idx>=? AND idx<? GROUP BY 1",
            (start, buckets, span, self.run.id, start, stop))
        totals = [0] * buckets
        for bucket, total in rows:
            if 0 <= bucket < buckets:
                totals[bucket] = int(total or 0)
        for step in self._traced(start, stop):
            bucket = (step.index - start) * buckets // span
            if 0 <= bucket < buckets:
                totals[bucket] += int(step.n_changed or 0)
        return totals

    def __iter__(self) -> Iterator[Step]:
        size, start = len(self), 0
        while start < size:
            chunk = self.range(start, min(start + 1000, size))
            if not chunk:
                return
            yield from chunk
            start += len(chunk)


_EQUAL_FILTERS = {"kind": "s.kind", "function": "s.function", "label": "s.label",
                  "thread": "s.thread"}


def _summary_of(step: Step) -> StepSummary:
    return StepSummary(step.index, step.kind, step.label, step.wall_time, step.function,
                       step.filename, step.lineno, step.depth, step.n_changed, step.thread,
                       step.task)


def _summary_matches(row: StepSummary, previous: StepSummary | None,
                     where: dict[str, Any]) -> bool:
    """``_step_filter``'s conditions, checked on one summary (for steps in trace chunks)."""
    for name, value in where.items():
        if value is None:
            continue
        if name in _EQUAL_FILTERS:
            if getattr(row, name) != value:
                return False
        elif name == "max_depth":
            if row.depth > int(value):
                return False
        elif name == "text":
            text = f"{row.function or ''} {row.filename or ''} {row.label or ''}".lower()
            if str(value).lower() not in text:
                return False
        elif name == "new_stretch":
            if value and previous is not None and (previous.function == row.function
                                                   and previous.depth == row.depth):
                return False
        else:
            raise TypeError(f"unknown step condition {name!r}")
    return True


def _step_filter(where: dict[str, Any]) -> tuple[tuple[str, str], list[Any]]:
    """Build (join, conditions) SQL and parameters for ``Steps.find``/``matching``."""
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


