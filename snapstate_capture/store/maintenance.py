"""Housekeeping of timelines: garbage collection (``snapstate gc``) and one-step export
(``snapstate export``). The only code besides the writer that changes a store; it does so
through the store's engine (``store.engine``).

Which blobs are alive is decided by *marking* from the rows that stay: every 32-hex-digit string
in a kept step (frame list, step values), effect-journal entry or run (entry, environment) is a
candidate key; every live blob that is JSON (frame records, previews, children lists) is scanned
the same way, a delta keeps its base alive and a manifest its pieces (``blobs.references``).
Marking by "anything that looks like a key" is conservative on purpose: a newer kind of reference
inside JSON is kept without this module knowing about it.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NotFoundError, TimelineError, step_out_of_range
from .hashing import canonical_json, content_hash
from . import blobs, chunks
from .engine import ReadEngine
from .sqlite.connection import DB_ERRORS
from .locations import is_store_url, open_read_engine, open_write_engine
from .reader import PAUSED, Run, Timeline, open_timeline
from .step_record import StepRecord
from .writer import TimelineWriter

_HEX_KEY = re.compile(r"[0-9a-f]{32}")
#: JSON blobs larger than this are not scanned for keys (no frame record or preview is).
_SCAN_LIMIT = 16 * 1024 * 1024


def _keys_in(value: Any, out: list[bytes]) -> None:
    """Append every 32-hex-digit string found anywhere in JSON ``value`` to ``out`` (as bytes)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) == 32 and _HEX_KEY.fullmatch(item):
                out.append(bytes.fromhex(item))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def _json_keys(texts: Iterable[str | None]) -> list[bytes]:
    out: list[bytes] = []
    for text in texts:
        if not text:
            continue
        try:
            _keys_in(json.loads(text), out)
        except (ValueError, RecursionError):
            continue
    return out


Fetch = Callable[[bytes], "tuple[int, int, bytes] | None"]


def _fetcher(engine: ReadEngine) -> Fetch:
    return engine.blob_row


class BlobMarker:
    """Marks the blobs reachable from root keys; ``fetch(key)`` returns a stored row or None."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self.live: set[bytes] = set()
        self.live_bytes = 0
        self._source = blobs.BlobSource(fetch, cache_bytes=16 * 1024 * 1024)

    def mark(self, roots: Iterable[bytes]) -> set[bytes]:
        """Mark everything reachable from ``roots``; return the keys newly marked."""
        new: set[bytes] = set()
        stack = list(roots)
        while stack:
            key = stack.pop()
            if key in self.live:
                continue
            row = self._fetch(key)
            if row is None:
                continue  # not a blob (a run id, a digest) or already missing
            codec, size, data = row
            self.live.add(key)
            new.add(key)
            self.live_bytes += len(data)

            def inner(key: bytes = key) -> bytes:
                return self._source.inner(key)[1]

            try:
                stack.extend(blobs.references(codec, data, inner))
                if not codec & blobs.MANIFEST and size <= _SCAN_LIMIT:
                    text = inner()
                    if text[:1] in (b"{", b"["):
                        _keys_in(json.loads(text), found := [])
                        stack.extend(found)
            except (blobs.BlobError, ValueError, RecursionError):
                continue  # undecodable: kept, but nothing it might refer to is known
        return new


def run_roots(engine: ReadEngine, run_id: str) -> list[bytes]:
    """Candidate blob keys named by one run's row, steps, trace chunks and effect journal."""
    keys = _json_keys(engine.run_texts(run_id))
    for data in engine.run_chunk_data(run_id):
        try:
            _keys_in(chunks.decode(data), keys)  # traced steps: hex keys inside the chunk
        except ValueError:
            continue
    return keys


# -- gc ----------------------------------------------------------------------------------------
@dataclass
class GcReport:
    """What ``collect_garbage`` did (or would do with ``dry_run``).

    ``removed_runs``: ``[(run id, name, steps)]``; ``kept_paused``: see below;
    ``removed_blobs`` / ``freed_blob_bytes``:
    unreferenced blobs deleted and their stored size; ``size_before`` / ``size_after``: file
    bytes (``size_after`` is None for a dry run).
    """

    removed_runs: list[tuple[str, str, int]] = field(default_factory=list)
    #: Runs the criteria chose that wait for an answer or sleep until a due time, not yet
    #: continued: kept (``[(run id, name, status)]``), as runs still being recorded are.
    kept_paused: list[tuple[str, str, str]] = field(default_factory=list)
    removed_blobs: int = 0
    freed_blob_bytes: int = 0
    size_before: int = 0
    size_after: int | None = None
    dry_run: bool = False


def parse_duration(text: str) -> float:
    """Seconds in ``"90s"``, ``"15m"``, ``"12h"``, ``"7d"`` or ``"2w"``; raises ``ValueError``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text or "")
    if not match:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30m, 12h, 7d, 2w)")
    unit = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[match.group(2)]
    return float(match.group(1)) * unit


def parse_size(text: str) -> int:
    """Bytes in ``"500MB"``, ``"2GB"``, ``"800k"``, ``"1048576"``; raises ``ValueError``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*", (text or "").lower())
    if not match:
        raise ValueError(f"not a size: {text!r} (use e.g. 500MB, 2GB)")
    unit = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[match.group(2)]
    if match.group(3) == "ib":
        unit = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[match.group(2)]
    return int(float(match.group(1)) * unit)


def _file_size(path: str | os.PathLike[str]) -> int:
    """The bytes a timeline takes: a file with its WAL; a store's stored blob bytes (the
    database's own files are its business)."""
    if is_store_url(path):
        engine = open_read_engine(path)
        try:
            return sum(size for _, size in engine.stored_blob_sizes())
        finally:
            engine.close()
    return sum(os.path.getsize(p) for p in (Path(path), Path(f"{path}-wal"))
               if os.path.exists(p))


def _selected(runs: list[Run], keep_runs: int | None, older_than: float | None,
              now: float) -> list[Run]:
    """The runs ``--keep-runs`` and ``--older-than`` select, by seq; gc removes those that are
    ``removable``."""
    chosen: set[str] = set()
    ordered = sorted(runs, key=lambda r: r.seq)
    if keep_runs is not None:
        chosen.update(r.id for r in ordered[:max(len(ordered) - keep_runs, 0)])
    if older_than is not None:
        chosen.update(r.id for r in ordered if (r.ended or r.started or now) < now - older_than)
    return [r for r in ordered if r.id in chosen]


def _sorted_out(runs: Iterable[Run]) -> tuple[set[str], set[str]]:
    """Of runs chosen for removal: ``(ids removed, ids kept as paused)`` (``removable``)."""
    doomed: set[str] = set()
    paused: set[str] = set()
    for run in runs:
        if removable(run):
            doomed.add(run.id)
        elif run.status in PAUSED:
            paused.add(run.id)
    return doomed, paused


def removable(run: Run) -> bool:
    """Whether gc may remove ``run``: not while it is being recorded, nor while it waits for
    an answer or sleeps until a due time and nobody continued it — a person answers a wait
    days later, and removing it lost the answer's run (helper-40: ``--keep-runs 1`` removed a
    waiting run, 1 of 1; the store's gc, every waiting run)."""
    status = run.status
    return status != "running" and not (status in PAUSED and not run.continued_as)


def collect_garbage(path: str | os.PathLike[str], *, keep_runs: int | None = None,
                    older_than: float | None = None, max_size: int | None = None,
                    dry_run: bool = False,
                    progress: Callable[[int, int], None] | None = None) -> GcReport:
    """Remove whole runs chosen by the criteria, then every unreferenced blob, then compact.

    ``keep_runs``: keep the N newest runs; ``older_than``: remove runs that ended (or started)
    more than this many seconds ago; ``max_size``: also remove the oldest runs until the live
    blobs fit in this many bytes. A fork copies its parent's steps, so removing a parent never
    takes what a kept fork needs: the blobs it names stay alive. Runs still being recorded are
    never removed, nor runs that wait for an answer or sleep and were not continued (kept and
    listed in ``kept_paused``), and a file with one is refused (a live recorder assumes its blobs stay). A
    database store's recorders go on meanwhile: their runs are kept and marked, and the sweep
    keeps writers out while it marks again what changed since (only the store's owner may
    delete: ``store.postgres.roles``).
    Raises ``TimelineError`` (bad file, live recording) — nothing is changed then.
    ``progress(done, total)``: one unit per kept run marked, then one for removing, one for
    compacting.
    """
    path = path if is_store_url(path) else Path(path)
    step = progress or (lambda done, total: None)
    report = GcReport(dry_run=dry_run, size_before=_file_size(path))
    with open_timeline(path) as timeline:
        runs = list(timeline.runs)
        live = [r for r in runs if r.status == "running"]
        doomed, paused = _sorted_out(_selected(runs, keep_runs, older_than, time.time()))
    if live and not is_store_url(path):  # (a store's recorders go on: see the sweep below)
        raise TimelineError(path, f"run {live[0].id[:8]} is still being recorded; gc refused")
    # A dry run reads only: opening for writing would switch the file to WAL (a byte change).
    engine: Any = open_read_engine(path) if dry_run else open_write_engine(path)
    try:
        seen = set(engine.run_rows())  # what was marked; a row changed later is marked again
        marker = BlobMarker(_fetcher(engine))
        newest_first = sorted((r for r in runs if r.id not in doomed), key=lambda r: -r.seq)
        total = len(newest_first) + 2
        for done, run in enumerate(newest_first, 1):
            marker.mark(run_roots(engine, run.id))
            step(done, total)
            if max_size is not None and marker.live_bytes > max_size and run is not newest_first[0]:
                more, held = _sorted_out(r for r in newest_first if r.seq <= run.seq)
                doomed |= more
                paused |= held
                marker = BlobMarker(_fetcher(engine))
                for kept in newest_first:
                    if kept.id not in doomed:
                        marker.mark(run_roots(engine, kept.id))
                break
        report.removed_runs = [(r.id, r.name, r.step_count) for r in runs if r.id in doomed]
        report.kept_paused = [(r.id, r.name, r.status) for r in runs if r.id in paused]
        dead = [(key, size) for key, size in engine.stored_blob_sizes() if key not in marker.live]
        report.removed_blobs = len(dead)
        report.freed_blob_bytes = sum(size for _, size in dead)
        if dry_run:
            return report
        with engine.transaction(immediate=True):
            # Writers went on while runs were marked (a store's recorders): with them kept
            # out now, runs begun or grown meanwhile are marked too, so a blob one of them
            # took for stored (an insert that found it there) is not swept from under it.
            engine.exclude_writers()
            changed = [row[0] for row in engine.run_rows()
                       if row not in seen and row[0] not in doomed]
            for run_id in changed:
                marker.mark(run_roots(engine, run_id))
            if changed:
                dead = [(key, size) for key, size in dead if key not in marker.live]
                report.removed_blobs = len(dead)
                report.freed_blob_bytes = sum(size for _, size in dead)
            engine.delete_runs(sorted(doomed))
            engine.delete_blobs([key for key, _ in dead])
        step(total - 1, total)
        engine.compact()
        step(total, total)
    except (*DB_ERRORS, *getattr(engine, "write_errors", ())) as exc:
        if getattr(exc, "sqlstate", None) == "42501":  # a store's reader or writer role
            raise TimelineError(path, "gc deletes runs and blobs, which only the store's owner "
                                      "may: run it connected as the owner; nothing was "
                                      "changed") from None
        raise TimelineError(path, f"gc failed ({exc}); the file is unchanged") from None
    finally:
        engine.close(**({} if dry_run else {"compact": False}))
    report.size_after = _file_size(path)
    return report


# -- export ------------------------------------------------------------------------------------
@dataclass
class ExportReport:
    """What ``export_step`` wrote: the new file, its run id, how many blobs and bytes, and the
    index of the step it holds (``-1`` given: the run's last step's index)."""

    path: str
    run_id: str
    blobs: int
    blob_bytes: int
    step: int = 0


def export_step(path: str | os.PathLike[str], out: str | os.PathLike[str], *,
                run_id: str | None, step: int) -> ExportReport:
    """Write step ``step`` of run ``run_id`` (prefix; None: the last run) of ``path`` as a new,
    standalone timeline ``out`` holding one run of one step: the same stack, sources and values
    (previews and payloads, copied byte for byte with everything they need).

    The new run keeps the original's entry and environment, adds ``env["exported_from"]``
    (``{"file", "run", "step"}``) and ends ``finished``. Raises ``TimelineError`` when ``out``
    exists, ``NotFoundError`` for an unknown run or step.
    """
    out = Path(out)
    if out.exists():
        raise TimelineError(out, "already exists; choose another output file")
    with open_timeline(path) as timeline:
        run = timeline.run(run_id)
        count = len(run.steps)
        index = step + count if step < 0 else step
        if not 0 <= index < count:
            raise NotFoundError(timeline.path, step_out_of_range(step, run.id, count))
        chosen = run.steps[index]
        frame_keys, extra, new_blobs = _step_refs(chosen)
        rows, total = _closure(timeline, run, frame_keys, extra, new_blobs)
        record = StepRecord(
            kind=chosen.kind, label=chosen.label, wall=chosen.wall_time, mono=chosen.mono_time,
            thread=chosen.thread, task=chosen.task, function=chosen.function,
            filename=chosen.filename, lineno=chosen.lineno, depth=chosen.depth,
            frames=frame_keys, extra=extra, errors=list(chosen.errors),
            n_changed=chosen.n_changed, blobs=new_blobs)
        env = dict(run.env, exported_from={"file": str(timeline.path), "run": run.id,
                                           "step": index})
        entry, name = run.entry, f"{run.name} step {index}"
    writer = TimelineWriter(out)
    try:
        writer.add_stored_blobs(rows)
        new_id = writer.begin_run(name=name, entry=entry, env=env)
        writer.append_step(new_id, record)
        writer.end_run(new_id, "finished")
    finally:
        writer.close()
    return ExportReport(str(out), new_id, len(rows), total, index)


def _step_refs(step: Any) -> tuple[list[str], dict[str, Any], dict[str, bytes]]:
    """Frame-record keys and step-value refs of ``step``, plus blobs to write that the source
    file does not hold: a traced step (stored in a trace chunk) gets frame records built from
    its frames, as a recorded step has them."""
    if step.frame_keys or not step.frames:
        return list(step.frame_keys), dict(step._extra_refs), {}
    keys, new = [], {}
    for frame in step.frames:
        data = canonical_json({"function": frame.function, "filename": frame.filename,
                               "lineno": frame.lineno, "code": frame.code_hash,
                               "source": frame.source_hash, "locals": frame._local_refs})
        key = content_hash(data).hex()
        new[key] = data
        keys.append(key)
    return keys, {name: value.ref for name, value in step.extra.items()}, new


def _closure(timeline: Timeline, run: Run, frame_keys: list[str], extra: dict[str, Any],
             new_blobs: dict[str, bytes]) -> tuple[list[tuple], int]:
    """Stored rows of every blob a step (and its run's entry) needs, as stored."""
    roots = _json_keys([json.dumps(frame_keys), json.dumps(extra), json.dumps(run.entry),
                        *(data.decode("utf-8") for data in new_blobs.values())])
    stored: dict[bytes, tuple[int, int, bytes] | None] = {}

    def fetch(key: bytes) -> tuple[int, int, bytes] | None:
        if key not in stored:
            stored[key] = timeline.engine.blob_row(key)
        return stored[key]

    marker = BlobMarker(fetch)
    marker.mark(roots)
    rows = [(key, *stored[key]) for key in marker.live]  # type: ignore[misc]
    return rows, sum(len(row[3]) for row in rows)
