"""gc on a store that recorders keep writing to: a run begun while gc was marking, whose blobs
were found already stored (an insert that found them there), keeps them; and on a database
store gc is the owner's to run, which the writer role is told in one line."""

from __future__ import annotations

import snapstate_capture as snap
from snapstate_capture.store.maintenance import collect_garbage
from snapstate_capture.trust.keys import find_key, generate_key
from snapstate_capture.trust.verify import verify_timeline
from tests.conftest import run_cli
from tests.store.test_roles import roles  # noqa: F401 - the fixture

SHARED = [f"message {i} " * 20 for i in range(200)]  # the same value in two runs


def _record(location: str, name: str, value) -> None:
    with snap.record(location, name=name):
        snap.checkpoint("turn", memory=value)


def test_a_run_begun_while_gc_marks_keeps_the_blobs_it_found_stored(store_location,
                                                                   monkeypatch):
    monkeypatch.setenv("SNAPSTATE_SPOOL", "0")  # each write is in the store when it returns
    generate_key()
    _record(store_location, "old", SHARED)  # removed by gc: SHARED's blobs are its alone ...
    _record(store_location, "kept", ["other"])
    began = []

    def progress(done: int, total: int) -> None:
        if done == total - 2 and not began:  # every kept run marked, nothing swept yet
            began.append(True)
            _record(store_location, "new", SHARED)  # ... until this run finds them stored

    report = collect_garbage(store_location, keep_runs=1, progress=progress)
    assert began and [name for _, name, _ in report.removed_runs] == ["old"]
    with snap.open_timeline(store_location, trust=True) as timeline:
        assert sorted(r.name for r in timeline.runs) == ["kept", "new"]
        new = next(r for r in timeline.runs if r.name == "new")
        assert new.steps[0].extra["memory"].load(trust=True) == SHARED
        result = verify_timeline(timeline, find_key())
    assert [(r.name, r.chain_problem, r.corrupt) for r in result.runs
            if r.chain_problem or r.corrupt] == []


def test_gc_on_a_store_while_a_run_is_recorded(pg_server, monkeypatch):
    from snapstate_capture.store.step_record import StepRecord
    from snapstate_capture.store.writer import TimelineWriter

    url = pg_server.create_database("gc_while_recording")
    monkeypatch.setenv("SNAPSTATE_SPOOL", "0")
    generate_key()
    _record(url, "old", SHARED)
    writer = TimelineWriter(url)  # an agent still recording, its step naming a blob of "old"
    live = writer.begin_run(name="live", entry={}, env={})
    key = "ab" * 16

    def step(n: int) -> StepRecord:
        return StepRecord(kind="checkpoint", label=str(n), wall=1.0 + n, mono=1.0 + n,
                          thread="MainThread", task=None, function="f", filename="a.py",
                          lineno=1, depth=0, frames=[], extra={"k": {"blob": key}},
                          blobs={key: b"kept while recorded"})
    writer.append_step(live, step(0))
    report = collect_garbage(url, keep_runs=0)
    assert [name for _, name, _ in report.removed_runs] == ["old"]
    writer.append_step(live, step(1))  # its writer knows the blob is stored: not sent again
    writer.end_run(live, "finished")
    writer.close()
    with snap.open_timeline(url) as timeline:
        (run,) = timeline.runs
        assert run.name == "live" and len(run.steps) == 2
        assert bytes.fromhex(key) in {k for k, _ in timeline.engine.stored_blob_sizes()}


def test_the_writer_role_is_told_gc_is_the_owners(roles, monkeypatch):
    from snapstate_capture.store.postgres.roles import grant

    monkeypatch.setenv("SNAPSTATE_SPOOL", "0")
    owner, agent, names = roles["owner"], roles["agent"], roles["names"]
    _record(owner, "old", ["x"])
    grant(owner, "writer", names["agent"])
    done = run_cli("gc", agent, "--keep-runs", "0")
    assert done.returncode == 2
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith(f"snapstate: postgresql://{names['agent']}@")
    assert "only the store's owner" in line and "nothing was changed" in line, line
    with snap.open_timeline(owner) as timeline:
        assert [r.name for r in timeline.runs] == ["old"]
