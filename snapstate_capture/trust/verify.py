"""Checking a timeline file: every blob's hash, every blob a run reaches, every run's step chain,
seal and signature (``snapstate verify``; DESIGN.md "Trust").

``verify_timeline(timeline, key)`` returns a ``Report`` with one ``RunReport`` per run:

- ``signature``: ``"valid"`` (signed by ``key``), ``"trusted"`` (signed with the Ed25519 key of
  a teammate the user trusts, ``trust.trusted``; ``signer`` is the name they were trusted
  under), ``"unsigned"``, ``"other-key"`` (signed by a key whose id is neither ``key``'s nor a
  trusted one's), ``"no-key"`` (signed, but no key to check it with) or
  ``"invalid"`` (tampered: the signature does not match, a key id stands without a signature or
  a signature without a key id, or the key id was changed on a run this key signed);
- ``chain_broken_at``: the first step whose stored row does not hash to its chain value (or is
  missing / out of order), with ``chain_problem`` saying how; ``chain_problem`` alone when the
  run's record does not match its seal (``store/sealing.py``: name, status, times, entry, order,
  key id, effect journal) or its step count and chain head disagree with its steps;
- ``corrupt``: blob key -> ``BlobProblem`` for every blob the run reaches — from its steps'
  frame records (source, locals), values, preview children, payload pieces, trace chunks,
  effect journal and entry — that is corrupt (hash mismatch) or missing, with the steps.

Everything is read in one read transaction (``Timeline.snapshot``): a file still being recorded
is checked as of one committed moment, so a live run is never mistaken for a damaged one; its
report says ``status == "running"`` and covers the steps committed then.

Memory stays bounded on hostile files: blobs are checked one at a time, zlib streams are
inflated in 1 MiB pieces, steps are read 1,000 at a time and trace chunks 16 at a time.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import TimelineError
from ..store.hashing import GENESIS, chain_hash
from ..store.sealing import (VERSION, RunState, chunk_fields, effect_fields, end_fields,
                             header_digest, seal_of, step_fields)
from .blob_check import check_blob, scan_blobs  # noqa: F401 - check_blob: part of the API
from .blob_reach import BlobProblem, BlobReach  # noqa: F401 - BlobProblem: part of the API
from .keys import UserKey
from .signing import check_public_signature, check_signature, is_public, signed_by
from .trusted import TrustedKey, trusted_by_id
from ..store.reader import Run, Timeline

_PAGE = 1000


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
    #: What a signature of the run covers, recomputed from its rows (``sealing.RunState``);
    #: None when the chain is broken. ``snapstate sign`` signs exactly this.
    state: RunState | None = field(default=None, repr=False, compare=False)
    #: The seal stored with the run (None before format 4), which ``sign`` expects unchanged.
    seal: bytes | None = field(default=None, repr=False, compare=False)
    #: The name of the trusted teammate whose key signed the run (``signature == "trusted"``).
    signer: str | None = None
    #: Whether the stored signature has the Ed25519 form (a teammate's key can check it).
    public: bool = False

    @property
    def intact(self) -> bool:
        """No tampering or corruption found (whether or not the run is signed)."""
        return (self.chain_broken_at is None and self.chain_problem is None
                and self.signature != "invalid" and not self.corrupt)

    @property
    def trusted(self) -> bool:
        """Intact and signed by the key it was checked with or a trusted teammate's: its
        payloads may be loaded."""
        return self.signature in ("valid", "trusted") and self.chain_broken_at is None \
            and self.chain_problem is None

    @property
    def live(self) -> bool:
        """The run was still being recorded: the report covers the steps committed then."""
        return self.status == "running"


@dataclass
class Report:
    """``verify_timeline``'s result: per-run reports, blobs that failed their hash check
    (key -> problem), the SQLite integrity check's complaint (or None) and the key id used."""

    path: str
    key_id: str | None
    runs: list[RunReport]
    bad_blobs: dict[str, str] = field(default_factory=dict)
    damaged: str | None = None
    #: Rows whose run is gone (run id -> what is left): a ``runs`` row was deleted or its id
    #: changed; gc removes a run's rows in one transaction, so these never appear otherwise.
    orphans: dict[str, str] = field(default_factory=dict)

    @property
    def intact(self) -> bool:
        return self.damaged is None and not self.bad_blobs and not self.orphans \
            and all(r.intact for r in self.runs)


def verify_timeline(timeline: Timeline, key: UserKey | None, *, check_blobs: bool = True,
                    progress: Callable[[int, int], None] | None = None) -> Report:
    """Check everything in ``timeline`` (see the module docstring) against ``key`` (or None).

    ``check_blobs=False`` skips the blob scan and blob-reachability walk (chains, seals and
    signatures only). ``progress(done, total)`` is called as the work goes: blobs checked so far
    (total 0: not known) while the blobs are scanned, then steps of the runs verified out of all
    their steps. Raises ``TimelineError`` when the file is too damaged to be read at all.
    """
    report = progress or (lambda done, total: None)
    with timeline.engine.snapshot():
        timeline.refresh()  # the runs as of this snapshot
        damaged = _quick_check(timeline) if check_blobs else None
        known: set[bytes] | None = None
        bad: dict[str, str] = {}
        runs = list(timeline.runs)
        total = sum(max(r.step_count or 0, 0) for r in runs)
        if check_blobs:
            known, bad = scan_blobs(timeline, progress=lambda done: report(done, 0))
        done = 0
        reports = []
        for run in runs:
            reports.append(_verified(timeline, run, key, known, bad))
            done += max(run.step_count or 0, 0)
            report(done, total)
        orphans = _orphans(timeline)
    return Report(str(timeline.path), key.key_id if key else None, reports, bad, damaged,
                  orphans)


def _verified(timeline: Timeline, run: Run, key: UserKey | None, known: set[bytes] | None,
              bad: dict[str, str]) -> RunReport:
    """``verify_run``, or a report of a run whose rows cannot be read (a damaged page: the
    whole file was one "damaged timeline" line, with no verdict for the intact runs)."""
    try:
        return verify_run(timeline, run, key, known=known, bad=bad)
    except TimelineError as exc:
        return RunReport(run.id, str(run.name), str(run.status), max(run.step_count or 0, 0),
                         "unsigned", None, chain_problem=f"its rows cannot be read: "
                                                         f"{exc.problem}")


def _orphans(timeline: Timeline) -> dict[str, str]:
    """Run ids named by steps, trace chunks or effects that no run row has; rows whose run
    id cannot be read at all are listed under ``"?"``."""
    what = {"steps": "step", "trace_chunks": "trace chunk", "effects": "effect"}
    found: dict[str, list[str]] = {}
    try:
        counts = timeline.engine.orphan_counts()
    except TimelineError as exc:
        return {"?": f"rows whose run cannot be read: {exc.problem}"}
    for table, run_id, count in counts:
        found.setdefault(str(run_id)[:64], []).append(f"{count} {what.get(table, table)}(s)")
    return {run_id: ", ".join(parts) for run_id, parts in found.items()}


def _quick_check(timeline: Timeline) -> str | None:
    return timeline.engine.check_storage()


def _run_row(timeline: Timeline, run_id: str) -> tuple:
    row = timeline.engine.run_header(run_id)
    if row is None:
        raise TimelineError(timeline.path, f"run {run_id[:8]} vanished while verifying")
    return row


def verify_run(timeline: Timeline, run: Run, key: UserKey | None, *,
               known: set[bytes] | None = None, bad: dict[str, str] | None = None) -> RunReport:
    """Check one run's chain, seal, effect journal and signature; with ``known`` (every blob key
    in the file) and ``bad`` (from ``scan_blobs``) also every blob the run reaches.

    Reads one snapshot of the file (``Timeline.snapshot``), so a run still being recorded is
    checked as of one committed moment.
    """
    with timeline.engine.snapshot():
        row = _run_row(timeline, run.id)
        return _verify_once(timeline, run, row, key, known, bad)


def _verify_once(timeline: Timeline, run: Run, row: tuple, key: UserKey | None,
                 known: set[bytes] | None, bad: dict[str, str] | None) -> RunReport:
    run_id = run.id
    (name, started, pid, host, proc_start, entry, env, parent_run, parent_step, status, ended,
     error, step_count, chain_head, signature, key_id, seq, seal) = row
    version = VERSION if seal is not None else 1
    count = step_count if _int(step_count) and step_count >= 0 else 0
    report = RunReport(run_id, str(name), str(run.status), count, "unsigned",
                       key_id if isinstance(key_id, str) else None,
                       seal=seal if isinstance(seal, bytes) else None)
    reach = BlobReach(timeline, known, bad or {}) if known is not None else None
    if reach is not None:
        reach.add_entry(entry)
    head, found = _check_steps(timeline, run_id, count, report, reach, version)
    effects, effects_head = _check_effects(timeline, run_id, reach)
    if report.chain_broken_at is None:
        if found < count:
            report.chain_broken_at = found
            report.chain_problem = (f"step {found} is missing" if found + 1 == count
                                    else f"steps {found}-{count - 1} are missing")
        elif not _int(step_count) or step_count < 0:
            report.chain_problem = "the run's step count is malformed"
        elif head != (chain_head or GENESIS):
            report.chain_problem = "the run's chain head does not match its steps"
    if report.chain_problem is None:
        extra = timeline.engine.step_row_count(run_id, count)
        if extra:
            report.chain_problem = f"{extra} step(s) were added after the run's last step"
    if reach is not None:
        report.corrupt = reach.problems
    state: RunState | None = None
    try:
        state = RunState(
            run_id, header_digest(run_id=run_id, name=name, started=started, pid=pid,
                                  host=host, proc_start=proc_start, entry=entry, env=env,
                                  parent_run=parent_run, parent_step=parent_step),
            key_id=key_id if version >= 2 else None, seq=seq, steps=step_count,
            head=chain_head or GENESIS, effects=effects, effects_head=effects_head,
            end=None if status == "running" else end_fields(status=status, ended=ended,
                                                            error=error),
            version=version)
        if version >= 2:
            seal_of(state)  # a field of a type canonical JSON (or the seq) cannot take fails
    except (TypeError, ValueError, AttributeError, OverflowError):
        state = None  # a field of the wrong type: not what our writer wrote
    if version < 2 and report.chain_problem is None and report.chain_broken_at is None \
            and isinstance(signature, bytes) and len(signature) > 32:
        report.chain_problem = "the run's seal is missing (its signature is of a sealed run)"
    if version >= 2 and report.chain_problem is None:
        if not isinstance(seal, bytes) or state is None or seal != seal_of(state):
            report.chain_problem = ("the run's record does not match its seal (its name, status, "
                                    "times, entry, place in the file, key or effect journal "
                                    "was altered)")
    if report.chain_broken_at is None and report.chain_problem is None:
        report.state = state
    report.public = is_public(signature)
    report.signature = _signature(run_id, state, signature, key_id, key, version)
    if report.signature == "other-key" or (report.signature == "no-key" and report.public):
        teammate = trusted_by_id().get(key_id) if isinstance(key_id, str) else None
        if teammate is not None:
            report.signature = _teammate(teammate, state, signature)
            report.signer = teammate.name if report.signature == "trusted" else None
    return report


def _teammate(teammate: TrustedKey, state: RunState | None, signature: Any) -> str:
    """``"trusted"`` when ``signature`` is ``teammate``'s Ed25519 signature of ``state``;
    ``"invalid"`` otherwise (their key id on a run their key did not sign as it is: altered,
    or signed with HMAC, which only they can check — ``"other-key"`` then)."""
    if not is_public(signature):
        return "other-key"
    try:
        return "trusted" if state is not None and check_public_signature(
            teammate.public, state, signature) else "invalid"
    except (TypeError, ValueError):
        return "invalid"


def _signature(run_id: str, state: RunState | None, signature: Any, key_id: Any,
               key: UserKey | None, version: int) -> str:
    """The signature verdict (see ``RunReport.signature``)."""
    if version < 2:  # runs from before seals: the key id was outside what was signed
        if not isinstance(signature, bytes):
            return "unsigned"
        if key is None:
            return "no-key"
        if key_id != key.key_id:
            return "other-key"
        return "valid" if _checks(key, state, signature) else "invalid"
    if key_id is None and signature is None:
        return "unsigned"
    if not isinstance(key_id, str) or not isinstance(signature, bytes):
        return "invalid"  # a key id without a signature, or a signature without a key id
    if key is None:
        return "no-key"
    if key_id != key.key_id:
        # This key's tag of the run, or its signature with this key's id: ours, re-labelled.
        ours = signed_by(key, run_id, signature) or (
            state is not None and _checks(key, replace(state, key_id=key.key_id), signature))
        return "invalid" if ours else "other-key"
    return "valid" if _checks(key, state, signature) else "invalid"


def _checks(key: UserKey, state: RunState | None, signature: bytes) -> bool:
    try:
        return state is not None and check_signature(key, state, signature)
    except (TypeError, ValueError):
        return False


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
                 reach: BlobReach | None, version: int) -> tuple[bytes, int]:
    """Recompute the chain over steps ``0 … count-1`` — ``steps`` rows and trace chunks, in
    index order (schema version 2) — and set ``report.chain_broken_at`` at the first bad one.
    Returns the recomputed head and the index after the last step read."""
    units: Iterator[tuple] = _step_rows(timeline, run_id, count)
    if _has_chunks(timeline):
        units = heapq.merge(units, _chunk_rows(timeline, run_id, count),
                            key=lambda row: row[0] if _int(row[0]) else -1)
    previous, expected = GENESIS, 0
    for row in units:
        index, is_chunk = row[0], row[1] is None
        if report.chain_broken_at is None:
            if index != expected:
                report.chain_broken_at = expected
                report.chain_problem = f"step {expected} is missing"
            else:
                digest = (_chunk_hash(previous, row, version) if is_chunk
                          else _step_hash(previous, row, version))
                if digest is not None and digest != row[-1] and version < 2 and (
                        (_chunk_hash(previous, row, VERSION) if is_chunk
                         else _step_hash(previous, row, VERSION)) == row[-1]):
                    report.chain_broken_at = expected
                    report.chain_problem = ("the run's seal is missing (its steps were "
                                            "chained as a sealed run's)")
                elif digest is None or digest != row[-1]:
                    report.chain_broken_at = expected
                    what = (f"the trace chunk of steps {index}-{index + row[2] - 1}"
                            if is_chunk and _int(row[2]) else f"step {expected}")
                    report.chain_problem = (f"{what} is malformed" if digest is None
                                            else f"{what} was altered")
                else:
                    previous = digest
        if reach is not None and _int(index):
            if is_chunk:
                reach.add_chunk(index, row[3])
            else:
                reach.add_step(index, row[7], row[8])
        if not _int(index):
            expected += 1
        elif is_chunk:
            expected = index + (row[2] if _int(row[2]) and row[2] > 0 else 1)
        else:
            expected = index + 1
    return previous, expected


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _chunk_hash(previous: bytes, row: tuple, version: int) -> bytes | None:
    first, _, count, data, _ = row
    if not isinstance(data, bytes) or not _int(count):
        return None
    return chain_hash(previous, chunk_fields(data, first, count, version=version))


def _step_hash(previous: bytes, row: tuple, version: int) -> bytes | None:
    (_, kind, label, wall, mono, thread, task, frames, extra, errors, function, filename,
     lineno, depth, n_changed, _) = row
    try:
        fields = step_fields(kind, label, wall, mono, thread, task, json.loads(frames),
                             json.loads(extra) if extra else None,
                             json.loads(errors) if errors else None, function=function,
                             filename=filename, lineno=lineno, depth=depth,
                             n_changed=n_changed, version=version)
        return chain_hash(previous, fields)
    except (TypeError, ValueError, RecursionError, OverflowError):
        return None


_EFFECT_COLUMNS = ("seq", "step", "site", "task", "ordinal", "name", "args_hash", "outcome",
                   "value")


def _check_effects(timeline: Timeline, run_id: str, reach: BlobReach | None
                   ) -> tuple[int, bytes]:
    """Return ``(count, chain head)`` of the run's effect journal in ``seq`` order."""
    state = RunState(run_id, b"")
    after: Any = -1
    while True:
        rows = timeline.engine.effect_rows(run_id, after_seq=after, limit=_PAGE)
        for row in rows:
            fields = dict(zip(_EFFECT_COLUMNS, row))
            try:
                state = state.with_effect(effect_fields(**fields))
            except (TypeError, ValueError, RecursionError, OverflowError):
                state = state.with_effect({"malformed": repr(row)[:200]})
            if reach is not None:
                reach.add_effect(fields["step"] if _int(fields["step"]) else -1,
                                 _loads(fields["value"]))
        if len(rows) < _PAGE:
            return state.effects, state.effects_head
        after = rows[-1][0]


def _loads(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, (str, bytes)) else None
    except (ValueError, RecursionError):
        return None
