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
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..errors import IntegrityError, NotFoundError
from . import blobs, previews, sanitize
from .engine import EFFECT_COLUMNS, ReadEngine
from .leases import Lease, read_leases
from .locations import absolute_location, location_label, open_read_engine
from .records import Frame, PayloadGate, Step, StepSummary, Value
from .processes import process_gone, process_start_marker
from .run_steps import Steps

__all__ = ["Frame", "ParentRef", "PayloadGate", "Run", "Step", "StepSummary", "Steps", "Timeline",
           "Value", "open_timeline"]

#: Statuses of a run that stopped at a durable wait, to be continued (``capture/waits.py``).
PAUSED = ("waiting", "sleeping")
class Timeline:
    """An open timeline file (read-only). Use as a context manager or call ``close()``.

    ``runs`` lists the runs in creation order; ``run(id_prefix)`` finds one by a unique id prefix
    (None or "" gives the last run). Thread-safe: one lock around the connection.
    Raises ``TimelineError`` (naming the file) when the file is missing, not a timeline, damaged
    or from a newer SnapState.
    """

    def __init__(self, path: str | os.PathLike[str], *, trust: bool = False,
                 gate: PayloadGate | None = None) -> None:
        self.path = location_label(path)
        #: Where another process opens the same timeline (``locations.absolute_location``).
        self.location = absolute_location(path)
        self.trust = trust
        #: Decides whether payloads may be unpickled (``store.records.PayloadGate``); None: never.
        self.gate = gate
        #: Where the SQL runs (``store.engine.ReadEngine``): the file's SQLite engine, or a store's.
        self.engine: ReadEngine = open_read_engine(path)
        self._lock = threading.RLock()
        self._json_cache: OrderedDict[str, Any] = OrderedDict()
        self._runs: list[Run] | None = None
        self._leases: dict[str, Lease] | None = None
        self._continuations: dict[str, str] | None = None
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
        self.engine.close()

    @property
    def runs(self) -> list[Run]:
        """All runs, oldest first (re-read by ``refresh()``)."""
        if self._runs is None:
            self.refresh()
        assert self._runs is not None
        return self._runs

    def refresh(self) -> None:
        """Re-read the run list and step counts (for following a file still being recorded)."""
        self._runs = [Run(self, row) for row in self.engine.run_rows()]
        self._leases = None
        self._continuations = None

    def continuations(self) -> dict[str, str]:
        """Run id -> the id of the run that continues it (``Run.continues``, from the sealed
        headers), read once per ``refresh()``."""
        if self._continuations is None:
            self._continuations = {run.continues: run.id for run in self.runs
                                   if run.continues is not None}
        return self._continuations

    def leases(self) -> dict[str, Lease]:
        """The resume leases of the store by run id (``store/leases.py``), read once per
        ``refresh()``; empty for files of format 5 and older."""
        if self._leases is None:
            self._leases = read_leases(self.engine)
        return self._leases

    def run(self, run_id: str | None = None) -> Run:
        """Return the run whose id starts with ``run_id`` (the last run when None or empty).

        Raises ``NotFoundError`` when no run or more than one run matches, or the file has none.
        Before ``runs`` was read this asks the store for that run alone (a store of 100,000
        runs is not read whole to open one).
        """
        if self._runs is None:
            return self._look_up(run_id)
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

    def _look_up(self, run_id: str | None) -> Run:
        if not run_id:
            row = self.engine.last_run_row()
            if row is None:
                raise NotFoundError(self.path, "holds no runs")
            return Run(self, row)
        rows = self.engine.runs_by_id(run_id.lower(), 2)
        if len(rows) == 1:
            return Run(self, rows[0])
        if not rows:
            if self.engine.last_run_row() is None:
                raise NotFoundError(self.path, "holds no runs")
            raise NotFoundError(self.path, f"no run with id {run_id!r}")
        count = len(self.engine.runs_by_id(run_id.lower(), 1 << 30))
        raise NotFoundError(self.path, f"run id {run_id!r} is ambiguous ({count} runs)")

    def reload_run(self, run_id: str) -> Run | None:
        """Run ``run_id`` (a whole id) read again — status, step count, end — or None when it
        is gone: following one live run without re-reading every run of the store."""
        rows = self.engine.runs_by_id(run_id, 1)
        return Run(self, rows[0]) if rows and rows[0][0] == run_id else None

    def run_page(self, *, before: int | None = None, limit: int = 100,
                 where: dict[str, Any] | None = None) -> list[Run]:
        """Up to ``limit`` runs with ``seq`` below ``before`` (from the newest when None),
        matching ``where`` (``store.sqlite.run_list.RUN_FILTERS``), newest first.

        Keyset pages: pass the last run's ``seq`` for the next page. Raises ``TimelineError``
        when the store cannot be read, ``IntegrityError`` for a malformed run row."""
        return [Run(self, row) for row in self.engine.run_page(before=before, limit=limit,
                                                               where=where)]

    def run_count(self, where: dict[str, Any] | None = None) -> int:
        """How many runs match ``where`` (all runs when None)."""
        return self.engine.run_count(where)

    def run_seq_at(self, offset: int, where: dict[str, Any] | None = None) -> int | None:
        """The ``seq`` of the ``offset``-th newest run matching ``where`` (None past the end):
        where to start a page deep in the list."""
        return self.engine.run_seq_at(offset, where)

    def _raw_key(self, key: str) -> bytes:
        """Blob ``key`` (hex) as bytes; ``IntegrityError`` for a malformed one."""
        try:
            return bytes.fromhex(key)
        except (ValueError, TypeError):
            raise IntegrityError(self.path, f"malformed blob reference {key!r}") from None

    def blob(self, key: str, *, limit: int | None = None) -> bytes:
        """Return the bytes of blob ``key`` (hex), checked against its hash.

        Raises ``NotFoundError`` if absent, ``IntegrityError`` if the stored bytes do not match
        or (``limit``) the blob or a delta base it needs claims more than ``limit`` bytes —
        checked before anything is inflated (``blobs.BlobSource.inner``).
        """
        raw = self._raw_key(key)
        try:
            with self._lock:
                return self._blobs.content(raw, limit=limit)
        except blobs.BlobError as exc:
            raise self._blob_error(exc, raw) from None

    def _blob_error(self, exc: blobs.BlobError, asked: bytes | None = None) -> IntegrityError:
        """What a failed read of blob ``asked`` (None: the one that failed) raises:
        ``NotFoundError`` for a missing blob, else ``IntegrityError`` naming the blob and what
        is wrong with it (too large: the blob asked for, not the delta base that claimed it)."""
        if exc.too_large:
            where = (asked or exc.key).hex()[:12]
            return IntegrityError(self.path, f"blob {where} is too large for what it holds")
        if exc.missing:
            return NotFoundError(self.path, f"missing blob {exc.key.hex()[:12]}")
        return IntegrityError(self.path, f"blob {exc.key.hex()[:12]} is {exc}")

    def blob_pieces(self, key: str) -> list[str] | None:
        """The piece keys (hex, in order) of manifest ``key``; None when ``key`` is a plain
        blob. Reads the manifest's own row only, never its pieces. Raises like ``blob``."""
        raw = self._raw_key(key)
        try:
            with self._lock:
                is_manifest, inner = self._blobs.inner(raw)
        except blobs.BlobError as exc:
            raise self._blob_error(exc) from None
        if not is_manifest:
            return None
        pieces = blobs.manifest_pieces(inner)
        if pieces is None:
            raise IntegrityError(self.path, f"blob {key[:12]} is a malformed manifest")
        return [piece.hex() for piece in pieces]

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
        return self.engine.blob_row(raw)

    def _fetch_chain(self, raw: bytes) -> dict[bytes, tuple[int, int, bytes]]:
        """Rows of blob ``raw`` and of every delta base below it, in one query (a cold delta
        chain of 40 rows was 40 round trips)."""
        rows = self.engine.blob_chain(raw, blobs.MAX_NESTING)
        return {bytes(h): (codec, size, data) for h, codec, size, data in rows
                if isinstance(h, bytes)}

    def check_size(self, key: str, limit: int) -> None:
        """Raise ``IntegrityError`` when blob ``key``, or any delta base it is decoded against,
        claims more than ``limit`` bytes: frame records, previews and source are never that big,
        and a hostile file's zlib bomb must not be inflated to find out (``sanitize.MAX_RECORD``)."""
        raw = self._raw_key(key)
        # A delta row is decoded against its base, so every base down the chain must fit too:
        # only sizes and the 16-byte base reference are read (one query), nothing is inflated.
        rows = self.engine.blob_chain(raw, blobs.MAX_NESTING, head_only=True)
        for _, codec, size, head in rows:
            if not isinstance(size, int) or size > limit:
                raise IntegrityError(self.path, f"blob {key[:12]} is too large for what it holds")
            if not isinstance(codec, int) or not isinstance(head, bytes):
                return  # malformed: the full read reports it

    def blob_sizes(self, keys: Sequence[str]) -> dict[str, int]:
        """Uncompressed sizes in bytes of the blobs ``keys`` (hex) that exist, in one query
        (lets a reader decide how to load a value before reading it)."""
        raws = _raw_keys(keys)
        if not raws:
            return {}
        rows = self.engine.blob_sizes(raws)
        return {bytes(h).hex(): size for h, size in rows
                if isinstance(h, bytes) and isinstance(size, int) and size >= 0}

    def json_blob(self, key: str, *, remember: bool = True) -> Any:
        """Return blob ``key`` decoded as JSON, through a small LRU cache (``remember=False``:
        read through it, not into it)."""
        with self._lock:
            if key in self._json_cache:
                self._json_cache.move_to_end(key)
                return self._json_cache[key]
        try:
            value = json.loads(self.blob(key, limit=sanitize.MAX_RECORD))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise IntegrityError(self.path, f"blob {key[:12]} is not valid JSON") from None
        if remember:
            with self._lock:
                self._json_cache[key] = value
                if len(self._json_cache) > 4096:
                    self._json_cache.popitem(last=False)
        return value

    def prefetch(self, keys: Iterable[str]) -> None:
        """Read many small blobs (hex keys: frame records, previews) a few hundred per query
        into the blob cache (``BlobSource.read_ahead``), so reading each next asks nothing.
        Raises as ``blob`` does for a key it cannot read; a malformed key is left for that
        read to report."""
        raws = _raw_keys(keys)
        try:
            with self._lock:
                self._blobs.read_ahead(raws, self.engine.blob_rows, limit=sanitize.MAX_RECORD)
        except blobs.BlobError as exc:
            raise self._blob_error(exc) from None

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
        self._sources: dict[str, str] | None = None  # ``source_files``, once read
        #: ``(step count when read, raised_effect_steps())``: read again when the run grew
        self._raised: tuple[int, list[int]] | None = None
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

    @property
    def user(self) -> str | None:
        """Who recorded the run (the login name in its environment facts), or None."""
        user = self.env.get("user")
        return user if isinstance(user, str) else None

    def __repr__(self) -> str:
        return f"<Run {self.id[:8]} {self.name!r} {self.status} {self.step_count} steps>"

    @property
    def continues(self) -> str | None:
        """The id of the run this one continues (a resume made it: its sealed ``env`` says so,
        ``store/leases.py``), else None — a fork or a first run."""
        if self.parent is None:
            return None
        named = self.env.get("continues")
        return named if named == self.parent.run_id else None

    @property
    def continued_as(self) -> str | None:
        """The id of the run that continues this one (answered its wait, woke it, resumed it
        after a crash), from the continuations' sealed headers; None while nobody did. (The
        store's lease row says the same; it is what makes the claim atomic, not what is shown.)"""
        return self.timeline.continuations().get(self.id)

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
        if process_gone(self.pid):
            return "crashed"
        marker = process_start_marker(self.pid)  # None without /proc: the pid is all we have
        if marker is not None and self._proc_start and marker != self._proc_start:
            return "crashed"  # the pid is another process's now
        return "running"

    def source_files(self) -> dict[str, str]:
        """``{filename: source hash}`` for every file on the run's saved stacks, step rows and
        trace chunks alike (first seen wins); raises ``TimelineError`` when the file cannot be
        read. Read once per ``Run`` of a run that ended (a replay asks for it three or four
        times: where to run, drift, patched lines; a traced run's answer reads every chunk)."""
        if self._sources is None:
            sources = self._read_source_files()
            if self.stored_status == "running":  # a live run's stacks grow: read it afresh
                return sources
            self._sources = sources
        return dict(self._sources)

    def _read_source_files(self) -> dict[str, str]:
        timeline = self.timeline
        keys: dict[str, None] = {}
        for frames in timeline.engine.distinct_frames(self.id):
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
        if timeline.engine.run_has_chunks(self.id):  # a traced run: its frames are in chunks
            from .chunk_scan import scan_sources

            for filename, source in scan_sources(timeline, self.id).items():
                sources.setdefault(filename, source)
        return sources

    def raised_effect_steps(self) -> list[int]:
        """Indexes of the run's effect steps whose call raised (their journal entry's outcome
        is ``raise``: the program may have caught it, so no ``exception`` step follows),
        ascending; one query of the effect journal per run length (the inspector's timeline
        and its ``x`` key both ask). Raises ``TimelineError`` when the file cannot be read."""
        count = len(self.steps)
        if self._raised is None or self._raised[0] != count:
            outcome, step = EFFECT_COLUMNS.index("outcome"), EFFECT_COLUMNS.index("step")
            self._raised = (count, sorted(
                row[step] for row in self.timeline.engine.effect_rows(self.id)
                if row[outcome] == "raise" and isinstance(row[step], int)))
        return list(self._raised[1])

    @property
    def duration(self) -> float | None:
        """Seconds from start to end (to the last step for unfinished runs), or None."""
        end = self.ended
        if end is None and len(self.steps):
            end = self.steps[-1].wall_time
        return None if end is None else max(end - self.started, 0.0)


def _raw_keys(keys: Iterable[str]) -> list[bytes]:
    """Hex blob keys as bytes, the malformed ones left out (a read of one reports it)."""
    raws = []
    for key in keys:
        try:
            raws.append(bytes.fromhex(key))
        except (ValueError, TypeError):
            continue
    return raws
