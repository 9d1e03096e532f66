"""Moving runs between stores: ``snapstate push FILE URL`` and ``snapstate pull URL -o FILE``.

A run is copied as it is stored — its row with chain head and signature, its step rows, trace
chunks, effect journal and every blob it reaches (``store.maintenance.BlobMarker``) — in one
transaction of the destination, so a pulled file is a self-contained timeline like any other and
a pushed run keeps its signature. Both ends are checked: a run whose chain does not verify at
the source, or whose signature is invalid, is refused; the copy is verified again where it
landed. A run already at the destination with the same chain head is left alone (pushing twice
is a no-op); one with the same id and another chain head is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..errors import SnapStateError
from ..store.engine import EFFECT_COLUMNS, RUN_COLUMNS
from ..store.locations import is_store_url, location_label, open_write_engine
from ..store.maintenance import BlobMarker, run_roots
from ..store.reader import Run, Timeline, open_timeline
from ..store.sealing import seal_of
from .blob_check import check_blob
from .keys import KeyFileError, find_key
from .verify import RunReport, verify_run

#: Step rows copied per batch.
_BATCH = 1000


class TransferError(SnapStateError):
    """A run cannot be moved: it does not verify, is still recording, or clashes at the
    destination. The message names the store and the run."""


@dataclass
class TransferReport:
    """What ``copy_run`` did: ``copied`` False when the run was there already."""

    run_id: str
    destination: str
    copied: bool
    steps: int = 0
    blobs: int = 0
    blob_bytes: int = 0


def copy_run(source: str | os.PathLike[str], destination: str | os.PathLike[str], *,
             run_id: str | None = None,
             progress: Callable[[int, int], None] | None = None) -> TransferReport:
    """Copy run ``run_id`` (prefix; None: the last run) of ``source`` into ``destination``;
    ``progress(done, total)`` counts steps, then blobs, copied.

    Either may be a file or a store URL; a missing destination file is created. Raises
    ``TransferError`` (see the module docstring), ``TimelineError``/``NotFoundError`` for a
    store that cannot be read or a run that is not there.
    """
    with open_timeline(source) as timeline:
        run = timeline.run(run_id)
        checked = _check_source(timeline, run)
        keys = _reached_blobs(timeline, run)
        _check_blobs(timeline, run, keys)
        _check_destination(destination, run, keys)
        engine = open_write_engine(destination)
        try:
            existing = engine.run_header(run.id)
            if existing is not None:
                if bytes(existing[13] or b"") != bytes(run.chain_head or b""):
                    raise TransferError(f"{destination}: holds another run with id "
                                        f"{run.id[:8]}; nothing was copied")
                return TransferReport(run.id, str(destination), copied=False)
            report = TransferReport(run.id, str(destination), copied=True)
            with engine.transaction(immediate=True):
                _copy(timeline, run, engine, report, checked, keys,
                      progress or (lambda done, total: None))
        except Exception as exc:
            if getattr(exc, "sqlstate", None) == "42501":  # a store's reader role
                raise TransferError(f"{location_label(destination)}: permission denied: "
                                    "copying a run into a store takes its writer or owner "
                                    "role; nothing was copied") from None
            raise
        finally:
            engine.close()
    with open_timeline(destination) as landed:
        after = verify_run(landed, landed.run(run.id), _key())
    if after.chain_broken_at is not None or after.chain_problem or after.signature == "invalid":
        raise TransferError(f"{destination}: run {run.id[:8]} does not verify after the copy "
                            f"({after.chain_problem or after.signature})")
    return report


def _key():
    try:
        return find_key()
    except KeyFileError:
        return None


def _check_source(timeline: Timeline, run: Run) -> RunReport:
    if run.status == "running":
        raise TransferError(f"{timeline.path}: run {run.id[:8]} is still being recorded; "
                            "move it once it has ended")
    report = verify_run(timeline, run, _key())
    if report.chain_broken_at is not None or report.chain_problem:
        raise TransferError(f"{timeline.path}: run {run.id[:8]} is altered or damaged "
                            f"({report.chain_problem or 'chain broken'}); nothing was copied")
    if report.signature == "invalid":
        raise TransferError(f"{timeline.path}: run {run.id[:8]} has an invalid signature; "
                            "nothing was copied")
    return report


def _reached_blobs(timeline: Timeline, run: Run) -> list[bytes]:
    """The keys of every blob ``run`` reaches (``BlobMarker``), sorted: what a copy takes."""
    marker = BlobMarker(timeline.engine.blob_row)
    marker.mark(run_roots(timeline.engine, run.id))
    return sorted(marker.live)


def _check_blobs(timeline: Timeline, run: Run, keys: list[bytes]) -> None:
    """Refuse the copy when a blob the run reaches is damaged at the source: each is read and
    checked against its hash (``blob_check.check_blob``). Before, push and pull said they
    copied such a run (helper-40: 3 of 3)."""
    for key in keys:
        problem = check_blob(timeline, key)
        if problem is not None:
            raise TransferError(f"{timeline.path}: run {run.id[:8]} reaches blob "
                                f"{key.hex()[:12]}, which is {problem}; nothing was copied "
                                "(`snapstate verify` lists the damage)")


def _check_destination(destination: str | os.PathLike[str], run: Run,
                       keys: list[bytes]) -> None:
    """Refuse the copy when the destination holds another continuation of the run ``run``
    continues (a wait answered in two files, then pushed together: resuming both ran the
    effects after the wait twice, helper-41), or one of its blobs stored damaged (a copy
    leaves a blob there as it is: a new run inherited the damage, helper-40)."""
    if not is_store_url(destination) and not os.path.exists(destination):
        return  # a new file holds nothing yet
    try:
        there = open_timeline(destination)
    except SnapStateError:
        return  # no store there yet (the copy makes one), or none it can read (it says so)
    with there:
        parent = run.continues
        other = there.continuations().get(parent) if parent is not None else None
        if other is not None and other != run.id:
            raise TransferError(f"{there.path}: run {parent[:8]} was continued there already, "
                                f"as {other[:8]}; run {run.id[:8]} is another continuation "
                                "of it (its wait answered twice, or resumed twice): nothing "
                                "was copied")
        for key in keys:
            problem = check_blob(there, key)
            if problem not in (None, "missing"):
                raise TransferError(f"{there.path}: holds blob {key.hex()[:12]} of run "
                                    f"{run.id[:8]} damaged ({problem}); nothing was copied "
                                    "(`snapstate verify` lists the damage)")


def _copy(timeline: Timeline, run: Run, engine, report: TransferReport,
          checked: RunReport, live: list[bytes], progress: Callable[[int, int], None]
          ) -> None:
    source = timeline.engine
    row = next(r for r in source.run_rows() if r[0] == run.id)
    fields = dict(zip(RUN_COLUMNS, row))
    fields["seq"] = engine.next_run_seq()  # the run's place in its new store
    if checked.state is not None and checked.state.version >= 2:
        # sealed anew for that place: the seal covers the seq, the signature does not
        fields["seal"] = seal_of(replace(checked.state, seq=fields["seq"]))
    engine.insert_run_row(fields)
    count = len(run.steps)
    for start in range(0, count, _BATCH):
        rows = source.step_rows(run.id, start, start + _BATCH)
        engine.insert_steps([(run.id, *r) for r in rows])
        report.steps += len(rows)
        progress(report.steps, count)
    bound = -1
    while True:
        chunks = source.chunk_page(run.id, 0, count, bound, 16)
        for first, size, data, digest in chunks:
            engine.insert_chunk(run.id, first, size, data, digest)
            report.steps += size
        progress(report.steps, count)
        if len(chunks) < 16:
            break
        bound = chunks[-1][0]
    for effect in source.effect_rows(run.id):
        engine.insert_effect(run.id, dict(zip(EFFECT_COLUMNS, effect)))
    for done, key in enumerate(live, 1):
        stored = source.blob_row(key)
        if stored is not None:
            engine.insert_blobs([(key, *stored)])
            report.blobs += 1
            report.blob_bytes += len(stored[2])
        if not done % 200 or done == len(live):
            progress(count + done, count + len(live))
