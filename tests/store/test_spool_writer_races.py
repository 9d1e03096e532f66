"""The spool writer when two writers meet one spool (``capture.spool_writer``).

Under 8 recorders at once a finished writer takes the store's orphan spools: it may open a spool
just before the writer that held it stores it and deletes it, and lock it just after. It then
drained the spool a second time, attached to the ended run and took it for an altered one (the
state it rebuilt left the run's end out), so the end it wrote again kept the old seal over new
fields: "the run's record does not match its seal". These tests make each of those moments
happen on purpose, on both engines.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import snapstate_capture as snap
from snapstate_capture.capture import spool_writer
from snapstate_capture.capture.spool_writer import StoreSink, drain
from snapstate_capture.store.spool import SpoolFile, SpoolReader
from snapstate_capture.store.processes import process_facts
from snapstate_capture.store.step_record import StepRecord
from snapstate_capture.store.writer import TimelineWriter
from snapstate_capture.trust.keys import find_key, generate_key
from snapstate_capture.trust.signing import RunSigner
from snapstate_capture.trust.verify import verify_timeline

RUN = "ab" * 16


def _record(step: int) -> StepRecord:
    return StepRecord(kind="checkpoint", label="turn", wall=1000.0 + step, mono=5.0 + step,
                      thread="MainThread", task=None, function="loop", filename="agent.py",
                      lineno=7, depth=0, frames=[], extra={},
                      blobs={f"{step:032x}": f"value {step}".encode()})


def _spool(tmp_path: Path, location: str, steps: int = 5) -> Path:
    """A whole recording's spool (begin, ``steps`` steps, end) as a recorder leaves it."""
    path = tmp_path / f"{RUN}.spool"
    spool = SpoolFile(path, location, RUN)
    spool.append(("begin", {"name": "agent", "entry": {"kind": "script", "path": "agent.py"},
                            "env": {}, "parent": None, "blobs": {}, "run_id": RUN,
                            "facts": process_facts()}))
    for step in range(steps):
        spool.append(("step", vars(_record(step)), None))
    spool.append(("end", "finished", None))
    spool.close()
    return path


def _clean(location: str) -> tuple:
    """The run's stored row as verify sees it, once it is clean; fails otherwise."""
    with snap.open_timeline(location) as timeline:
        (report,) = verify_timeline(timeline, find_key()).runs
        assert report.chain_broken_at is None and report.chain_problem is None, report
        assert report.signature == "valid", report.signature
        (run,) = timeline.runs
        return run.status, len(run.steps), timeline.engine.run_rows()


def test_attaching_to_an_ended_run_finds_it_intact(store_location):
    generate_key()
    writer = TimelineWriter(store_location, signer=RunSigner(find_key()))
    run_id = writer.begin_run(name="agent", entry={}, env={})
    for step in range(3):
        writer.append_step(run_id, _record(step))
    writer.end_run(run_id, "finished")
    writer.close()
    again = TimelineWriter(store_location, signer=RunSigner(find_key()))
    try:
        assert again.attach_run(run_id) is True  # its seal covers its end, and so does ours
        assert again.next_index(run_id) == 3
    finally:
        again.close()


class _TakenMeanwhile:
    """``fcntl`` for the spool writer, where ``before_lock`` runs once, just before the first
    lock is taken (another writer's work at that exact moment)."""

    def __init__(self, before_lock) -> None:
        self.before_lock = before_lock
        self.LOCK_SH, self.LOCK_EX, self.LOCK_NB = fcntl.LOCK_SH, fcntl.LOCK_EX, fcntl.LOCK_NB

    def flock(self, fd: int, operation: int) -> None:
        before, self.before_lock = self.before_lock, None
        if before is not None:
            before()
        fcntl.flock(fd, operation)


def test_an_orphan_stored_by_its_writer_meanwhile_is_left_alone(store_location, tmp_path,
                                                                monkeypatch):
    generate_key()
    path = _spool(tmp_path, store_location)
    outcomes = []
    # The run's own writer stores the spool and deletes it after the orphan taker opened it,
    # before the orphan taker locks it.
    monkeypatch.setattr(spool_writer, "fcntl",
                        _TakenMeanwhile(lambda: outcomes.append(drain(path)[0])))
    assert drain(path)[0] == "busy"
    assert outcomes == ["stored"] and not path.exists()
    assert _clean(store_location)[:2] == ("finished", 5)


def test_the_recorders_writer_waits_for_an_orphan_taker_holding_its_spool(
        store_location, tmp_path, monkeypatch):
    generate_key()
    path = _spool(tmp_path, store_location)
    said: list[str] = []

    def orphan_taker() -> None:
        # Another writer took the spool for an orphan in the moment between the recorder
        # closing it and its own writer locking it, and stores it while holding it.
        handle = open(path, "rb")
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)

        def store() -> None:
            time.sleep(0.3)
            reader = SpoolReader(path)
            sink = StoreSink(store_location, RUN, patience=60)
            sink.apply(reader.read())
            sink.close()
            reader.close()
            path.unlink()
            handle.close()
        threading.Thread(target=store, daemon=True).start()

    monkeypatch.setattr(spool_writer, "fcntl", _TakenMeanwhile(orphan_taker))
    read_end, write_end = os.pipe()
    os.close(write_end)  # the recorder is gone already
    with os.fdopen(read_end, "rb") as liveness:
        assert drain(path, liveness=liveness, say=said.append)[0] == "stored"
    assert said == ["stored"]  # the recorder is told its run is in the store
    assert _clean(store_location)[:2] == ("finished", 5)


def test_a_second_pass_over_a_stored_spool_changes_nothing(store_location, tmp_path):
    generate_key()
    path = _spool(tmp_path, store_location)
    copy = tmp_path / "copy.spool"
    copy.write_bytes(path.read_bytes())
    assert drain(path)[0] == "stored"
    before = _clean(store_location)
    time.sleep(0.01)  # a second end would get another end time
    assert drain(copy)[0] == "stored"
    sink = StoreSink(store_location, RUN, patience=60)
    sink.cut_short("the store refused a step")  # a refusal meeting the ended run
    sink.close()
    assert _clean(store_location) == before
