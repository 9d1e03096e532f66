"""Checking a timeline file: every blob's hash, every run's step chain, effect journal and
signature (``snapstate verify``; DESIGN.md "Trust").

``verify_timeline(timeline, key)`` returns a ``Report`` with one ``RunReport`` per run:

- ``signature``: ``"valid"`` (signed by ``key``), ``"unsigned"``, ``"other-key"`` (signed by a
  key whose id is not ``key``'s), ``"no-key"`` (signed, but no key to check it with) or
  ``"invalid"`` (signed by this key id, but the signature does not match: tampered);
- ``chain_broken_at``: the first step whose stored row does not hash to its chain value (or is
  missing / out of order), with ``chain_problem`` saying how; ``None`` when the chain is intact;
- ``corrupt``: blob key -> ``BlobProblem`` for every blob the run uses that is corrupt (hash
  mismatch) or missing, with the steps that use it.

Memory stays bounded on hostile files: blobs are checked one at a time, zlib streams are
inflated in 1 MiB pieces, and steps are read 1,000 at a time.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import TimelineError
from ..store.hashing import GENESIS, chain_hash
from .keys import UserKey
from .blob_check import scan_blobs
from .signing import RunState, check_signature, effect_fields, end_fields, header_digest
from ..store.reader import Run, Timeline
from ..store.writer import chain_fields, chunk_chain_fields

_PAGE = 1000


@dataclass
class BlobProblem:
    """One bad blob a run uses: ``kind`` ("payload", "preview", "frame record", "source"),
    ``problem`` ("corrupt (hash mismatch)", "missing", …) and the ``steps`` (indices,
    ascending) whose stack or values reference it."""

    kind: str
    problem: str
    steps: list[int] = field(default_factory=list)


@dataclass
class RunReport:
    """What ``verify`` found for one run (see the module docstring)."""

    run_id: str
    name: str
    status: str
    steps: int
    signature: str
    key_id: str | None
    chain_broken_at: int | None = None
    chain_problem: str | None = None
    corrupt: dict[str, BlobProblem] = field(default_factory=dict)
    #: What a signature of the run covers, recomputed from its rows (``signing.RunState``);
    #: None when the chain is broken. ``snapstate sign`` signs exactly this.
    state: RunState | None = field(default=None, repr=False, compare=False)

    @property
    def intact(self) -> bool:
        """No tampering or corruption found (whether or not the run is signed)."""
        return (self.chain_broken_at is None and self.chain_problem is None
                and self.signature != "invalid" and not self.corrupt)

    @property
    def trusted(self) -> bool:
        """Intact and signed by the key it was checked with: its payloads may be loaded."""
        return self.signature == "valid" and self.chain_broken_at is None \
            and self.chain_problem is None


@dataclass
class Report:
    """``verify_timeline``'s result: per-run reports, blobs that failed their hash check
    (key -> problem), the SQLite integrity check's complaint (or None) and the key id used."""

    path: str
    key_id: str | None
    runs: list[RunReport]
    bad_blobs: dict[str, str] = field(default_factory=dict)
    damaged: str | None = None

    @property
    def intact(self) -> bool:
        return self.damaged is None and not self.bad_blobs and all(r.intact for r in self.runs)


def verify_timeline(timeline: Timeline, key: UserKey | None, *, check_blobs: bool = True
                    ) -> Report:
    """Check everything in ``timeline`` (see the module docstring) against ``key`` (or None).

    ``check_blobs=False`` skips the blob scan and blob-usage mapping (chains and signatures
    only). Raises ``TimelineError`` when the file is too damaged to be read at all.
    """
    damaged = _quick_check(timeline) if check_blobs else None
    known: set[bytes] | None = None
    bad: dict[str, str] = {}
    if check_blobs:
        known, bad = scan_blobs(timeline)
    reports = [verify_run(timeline, run, key, known=known, bad=bad) for run in timeline.runs]
    return Report(str(timeline.path), key.key_id if key else None, reports, bad, damaged)


def _quick_check(timeline: Timeline) -> str | None:
    return timeline.engine.check_storage()


def _run_row(timeline: Timeline, run_id: str) -> tuple:
    row = timeline.engine.run_header(run_id)
    if row is None:
        raise TimelineError(timeline.path, f"run {run_id[:8]} vanished while verifying")
    return row


def verify_run(timeline: Timeline, run: Run, key: UserKey | None, *,
               known: set[bytes] | None = None, bad: dict[str, str] | None = None) -> RunReport:
    """Check one run's chain, effect journal and signature; with ``known`` (every blob key in
    the file) and ``bad`` (from ``scan_blobs``) also map missing and bad blobs to steps.

    A run still being recorded is checked as of the ``runs`` row read first (steps beyond its
    step count are ignored; a signature that moved meanwhile is re-checked, up to 3 times).
    """
    for _ in range(3):
        row = _run_row(timeline, run.id)
        report = _verify_once(timeline, run, row, key, known, bad)
        if report.signature != "invalid" or _run_row(timeline, run.id)[14] == row[14]:
            return report
    return report


def _verify_once(timeline: Timeline, run: Run, row: tuple, key: UserKey | None,
                 known: set[bytes] | None, bad: dict[str, str] | None) -> RunReport:
    run_id, live = run.id, run.status == "running"
    (name, started, pid, host, proc_start, entry, env, parent_run, parent_step, status, ended,
     error, step_count, chain_head, signature, key_id) = row
    count = step_count if isinstance(step_count, int) and step_count >= 0 else 0
    report = RunReport(run_id, str(name), str(run.status), count, "unsigned",
                       key_id if isinstance(key_id, str) else None)
    usage = _Usage(timeline, known, bad or {}) if known is not None else None
    head, found = _check_steps(timeline, run_id, count, report, usage)
    effects, effects_head = _check_effects(timeline, run_id, usage)
    if report.chain_broken_at is None:
        if found < count:
            report.chain_broken_at = found
            report.chain_problem = (f"step {found} is missing" if found + 1 == count
                                    else f"steps {found}-{count - 1} are missing")
        elif head != (chain_head or GENESIS):
            report.chain_problem = "the run's chain head does not match its steps"
    if report.chain_problem is None and not live:
        extra = timeline.engine.step_row_count(run_id, count)
        if extra:
            report.chain_problem = f"{extra} step(s) were added after the run's last step"
    if usage is not None:
        report.corrupt = usage.problems
    state: RunState | None = None
    try:
        state = RunState(
            run_id, header_digest(run_id=run_id, name=name, started=started, pid=pid,
                                  host=host, proc_start=proc_start, entry=entry, env=env,
                                  parent_run=parent_run, parent_step=parent_step),
            steps=step_count, head=chain_head or GENESIS, effects=effects,
            effects_head=effects_head,
            end=None if status == "running" else end_fields(status=status, ended=ended,
                                                            error=error))
    except (TypeError, ValueError, AttributeError):
        state = None  # a field of the wrong type: not what our writer wrote
    if report.chain_broken_at is None and report.chain_problem is None:
        report.state = state
    if not isinstance(signature, bytes):
        report.signature = "unsigned"
    elif key is None:
        report.signature = "no-key"
    elif key_id != key.key_id:
        report.signature = "other-key"
    else:
        try:
            valid = state is not None and check_signature(key, state, signature)
        except (TypeError, ValueError):
            valid = False
        report.signature = "valid" if valid else "invalid"
    return report


def _step_rows(timeline: Timeline, run_id: str, count: int) -> Iterator[tuple]:
    after = -1
    while True:
        rows = timeline.engine.chain_rows(run_id, after, count, _PAGE)
        yield from rows
        if len(rows) < _PAGE:
            return
        after = rows[-1][0]


def _chunk_rows(timeline: Timeline, run_id: str, count: int) -> Iterator[tuple]:
    """``(first, None, count, data, hash)`` of the run's trace chunks, a few at a time (each
    holds up to thousands of steps)."""
    after = -1
    while True:
        rows = timeline.engine.chunk_page(run_id, 0, count, after, 16)
        for first, size, data, stored in rows:
            yield (first, None, size, data, stored)
        if len(rows) < 16:
            return
        after = rows[-1][0]


def _has_chunks(timeline: Timeline) -> bool:
    return timeline.engine.has_trace_chunks()


def _check_steps(timeline: Timeline, run_id: str, count: int, report: RunReport,
                 usage: _Usage | None) -> tuple[bytes, int]:
    """Recompute the chain over steps ``0 … count-1`` — ``steps`` rows and trace chunks, in
    index order (schema version 2) — and set ``report.chain_broken_at`` at the first bad one.
    Returns the recomputed head and the index after the last step read."""
    units: Iterator[tuple] = _step_rows(timeline, run_id, count)
    if _has_chunks(timeline):
        units = heapq.merge(units, _chunk_rows(timeline, run_id, count),
                            key=lambda row: row[0] if isinstance(row[0], int) else -1)
    previous, expected = GENESIS, 0
    for row in units:
        index, is_chunk = row[0], row[1] is None
        if report.chain_broken_at is None:
            if index != expected:
                report.chain_broken_at = expected
                report.chain_problem = f"step {expected} is missing"
            else:
                digest = _chunk_hash(previous, row) if is_chunk else _step_hash(previous, row)
                if digest is None or digest != row[-1]:
                    report.chain_broken_at = expected
                    what = (f"the trace chunk of steps {index}-{index + row[2] - 1}"
                            if is_chunk and _int(row[2]) else f"step {expected}")
                    report.chain_problem = (f"{what} is malformed" if digest is None
                                            else f"{what} was altered")
                else:
                    previous = digest
        if usage is not None and isinstance(index, int) and not is_chunk:
            usage.add_step(index, row[7], row[8])
        if not isinstance(index, int):
            expected += 1
        elif is_chunk:
            expected = index + (row[2] if _int(row[2]) and row[2] > 0 else 1)
        else:
            expected = index + 1
    return previous, expected


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _chunk_hash(previous: bytes, row: tuple) -> bytes | None:
    first, _, count, data, _ = row
    if not isinstance(data, bytes) or not _int(count):
        return None
    return chain_hash(previous, chunk_chain_fields(data, first, count))


def _step_hash(previous: bytes, row: tuple) -> bytes | None:
    _, kind, label, wall, mono, thread, task, frames, extra, errors, _ = row
    try:
        fields = chain_fields(kind, label, wall, mono, thread, task, json.loads(frames),
                              json.loads(extra) if extra else None,
                              json.loads(errors) if errors else None)
        return chain_hash(previous, fields)
    except (TypeError, ValueError, RecursionError):
        return None


def _check_effects(timeline: Timeline, run_id: str, usage: _Usage | None
                   ) -> tuple[int, bytes]:
    """Return ``(count, chain head)`` of the run's effect journal in ``seq`` order."""
    state = RunState(run_id, b"")
    after = -1
    while True:
        rows = timeline.engine.effect_rows(run_id, after_seq=after, limit=_PAGE)
        for row in rows:
            fields = dict(zip(("seq", "step", "site", "task", "ordinal", "name", "args_hash",
                               "outcome", "value"), row))
            try:
                state = state.with_effect(effect_fields(**fields))
            except (TypeError, ValueError, RecursionError):
                state = state.with_effect({"malformed": repr(row)[:200]})
            if usage is not None and isinstance(fields["step"], int):
                usage.add_refs(fields["step"], _loads(fields["value"]))
        if len(rows) < _PAGE:
            return state.effects, state.effects_head
        after = rows[-1][0]


def _loads(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, (str, bytes)) else None
    except (ValueError, RecursionError):
        return None


class _Usage:
    """Maps missing and bad blobs to the steps that use them, parsing each frame record once."""

    def __init__(self, timeline: Timeline, known: set[bytes], bad: dict[str, str]) -> None:
        self.timeline = timeline
        self.known = known
        self.bad = bad
        self.problems: dict[str, BlobProblem] = {}
        self._frames: dict[str, tuple[tuple[str, str], ...]] = {}

    def _problem(self, key: str) -> str | None:
        if key in self.bad:
            return self.bad[key]
        try:
            raw = bytes.fromhex(key)
        except ValueError:
            return "malformed reference"
        return None if raw in self.known else "missing"

    def _note(self, key: str, step: int, kind: str) -> None:
        problem = self._problem(key)
        if problem:
            entry = self.problems.setdefault(key, BlobProblem(kind, problem))
            if not entry.steps or entry.steps[-1] != step:
                entry.steps.append(step)

    def add_step(self, index: int, frames_text: Any, extra_text: Any) -> None:
        frames = _loads(frames_text)
        for frame_key in frames if isinstance(frames, list) else ():
            if not isinstance(frame_key, str):
                continue
            self._note(frame_key, index, "frame record")
            for key, kind in self._frame_refs(frame_key):
                self._note(key, index, kind)
        self.add_refs(index, _loads(extra_text))

    def add_refs(self, index: int, refs: Any) -> None:
        if isinstance(refs, dict):
            refs = list(refs.values()) if "p" not in refs else [refs]
        for ref in refs if isinstance(refs, list) else ():
            for key, kind in _ref_keys(ref):
                self._note(key, index, kind)

    def _frame_refs(self, frame_key: str) -> tuple[tuple[str, str], ...]:
        cached = self._frames.get(frame_key)
        if cached is not None:
            return cached
        keys: list[tuple[str, str]] = []
        if self._problem(frame_key) is None:
            try:
                record = self.timeline.json_blob(frame_key)
            except TimelineError:
                record = None
            if isinstance(record, dict):
                if isinstance(record.get("source"), str):
                    keys.append((record["source"], "source"))
                for item in record.get("locals") or ():
                    if isinstance(item, list) and len(item) == 2:
                        keys.extend(_ref_keys(item[1]))
        self._frames[frame_key] = result = tuple(keys)
        return result


def _ref_keys(ref: Any) -> list[tuple[str, str]]:
    """The blob keys a value ref names, with what each is: ``[(key, "preview"|"payload")]``."""
    if not isinstance(ref, dict):
        return []
    return [(ref[k], kind) for k, kind in (("p", "preview"), ("b", "payload"))
            if isinstance(ref.get(k), str)]
