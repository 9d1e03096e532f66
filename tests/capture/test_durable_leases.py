"""Resume leases in the store (issue 17 point 4): one holder at a time, expiry, the claim that
makes a run's one continuation, files of format 5 and older (no leases table) read and
migrated, and readers showing the chain from the sealed headers, not the lease row."""

from __future__ import annotations

import sqlite3
import time

import pytest

import snapstate_capture as snap
from snapstate_capture.store.leases import LeaseHeld, LeaseLost, LeaseStore
from snapstate_capture.store.sqlite.schema import FORMAT_VERSION
from snapstate_capture.store.writer import TimelineWriter


@pytest.fixture
def recorded(snap_path):
    with snap.record(snap_path, name="one") as block:
        snap.checkpoint("start", n=1)
    return snap_path, block.run_id


def test_one_holder_at_a_time_and_the_refusal_names_it(recorded):
    path, run_id = recorded
    with LeaseStore(path) as first, LeaseStore(path) as second:
        holder, before = first.acquire(run_id, user="alice", ttl=30)
        assert before is None and holder.user == "alice" and holder.expires > time.time()
        with pytest.raises(LeaseHeld) as refused:
            second.acquire(run_id, user="bob", ttl=30)
        message = str(refused.value)
        assert f"run {run_id[:8]} is being resumed by alice@" in message
        assert f"(pid {holder.pid}) since " in message and "expires in" in message
        assert second.renew(run_id, "not-the-token") is False
        assert first.renew(run_id, holder.token, ttl=30) is True
        assert first.release(run_id, holder.token) is True
        again, before = second.acquire(run_id, user="bob", ttl=30)
        assert before is not None and before.holder is None  # released: free
        assert again.user == "bob"


def test_an_expired_lease_can_be_taken_and_its_old_holder_cannot_renew(recorded):
    path, run_id = recorded
    with LeaseStore(path) as store:
        dead, _ = store.acquire(run_id, ttl=10, now=time.time() - 60)  # expired 50 s ago
        taker, before = store.acquire(run_id, ttl=10)
        assert before is not None and before.holder is not None
        assert before.holder.token == dead.token and not before.live()
        assert store.renew(run_id, dead.token) is False  # the stalled holder learns it lost
        assert store.get(run_id).holder.token == taker.token


def test_a_run_is_continued_once_and_only_under_a_live_lease(recorded):
    path, run_id = recorded
    with LeaseStore(path) as store:
        holder, _ = store.acquire(run_id, ttl=30)
        writer = TimelineWriter(path)
        try:
            continuation = writer.begin_run(name="c", entry={}, env={}, parent=(run_id, 0),
                                            claim=(run_id, holder.token))
            with pytest.raises(LeaseLost, match="lost"):
                writer.begin_run(name="c2", entry={}, env={}, parent=(run_id, 0),
                                 claim=(run_id, holder.token))
        finally:
            writer.close()
        assert store.get(run_id).continued_as == continuation
        store.release(run_id, holder.token)
        assert store.get(run_id).continued_as == continuation  # kept for good
        stale, _ = store.acquire(run_id, ttl=10, now=time.time() - 60)
    with snap.open_timeline(path) as timeline:
        assert [r.name for r in timeline.runs] == ["one", "c"]  # the refused claim made nothing
        assert timeline.run(run_id).continued_as == continuation
    with LeaseStore(path) as store:
        writer = TimelineWriter(path)
        try:
            with pytest.raises(LeaseLost):  # an expired lease claims nothing either
                writer.begin_run(name="c3", entry={}, env={}, claim=(run_id, stale.token))
        finally:
            writer.close()


def test_a_format_5_file_is_read_without_leases_and_migrated_when_written(recorded):
    path, run_id = recorded
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE leases; PRAGMA user_version=5;")
    conn.close()
    with snap.open_timeline(path) as timeline:
        assert timeline.runs[0].status == "finished"
        assert timeline.leases() == {} and timeline.runs[0].continued_as is None
    with LeaseStore(path) as store:
        holder, before = store.acquire(run_id, ttl=30)
        assert before is None
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT_VERSION == 6
    conn.close()
    with snap.open_timeline(path) as timeline:
        assert timeline.leases()[run_id].holder.token == holder.token


def test_readers_show_the_chain_from_sealed_headers_not_the_lease_row(recorded):
    path, run_id = recorded
    with LeaseStore(path) as store:
        holder, _ = store.acquire(run_id, ttl=30)
        writer = TimelineWriter(path)
        try:
            continuation = writer.begin_run(name="c", entry={}, env={"python": "3"},
                                            parent=(run_id, 0), claim=(run_id, holder.token))
            fork = writer.begin_run(name="f", entry={}, env={"python": "3"}, parent=(run_id, 0))
            writer.end_run(continuation, "finished")
            writer.end_run(fork, "finished")
        finally:
            writer.close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE leases SET continued_as=? WHERE run_id=?", (fork, run_id))
    conn.commit()
    conn.close()
    from snapstate_capture.trust.verify import verify_timeline

    with snap.open_timeline(path) as timeline:  # the unsealed lease row is not what is shown
        first = timeline.run(run_id)
        assert first.continued_as == continuation
        assert timeline.run(continuation).continues == run_id
        assert timeline.run(fork).continues is None
        assert all(r.intact for r in verify_timeline(timeline, None).runs)
    conn = sqlite3.connect(path)  # a fork passed off as the continuation: its seal breaks
    env = conn.execute("SELECT env FROM runs WHERE id=?", (fork,)).fetchone()[0]
    conn.execute("UPDATE runs SET env=? WHERE id=?",
                 (env[:-1] + f', "continues": "{run_id}"}}', fork))
    conn.commit()
    conn.close()
    with snap.open_timeline(path) as timeline:
        assert timeline.run(fork).continues == run_id  # what the edit claims…
        reports = {r.run_id: r for r in verify_timeline(timeline, None).runs}
        assert not reports[fork].intact and reports[continuation].intact  # …verify refutes


def test_a_lease_of_a_killed_resumer_on_this_machine_is_taken_a_heartbeat_later(recorded,
                                                                              monkeypatch):
    """A resumer killed by a signal leaves a lease that has not expired; on the same machine
    its process is known to be gone, so the next resume takes it once a heartbeat was missed
    (a third of the lease time) instead of at expiry. A holder still renewing (a pid of another
    PID namespace under the same host name), on another machine, or alive here, keeps it."""
    import subprocess
    import sys

    from snapstate_capture.store import leases

    path, run_id = recorded
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    now = time.time()
    with LeaseStore(path) as store:
        with monkeypatch.context() as patch:
            patch.setattr(leases.os, "getpid", lambda: gone.pid)
            store.acquire(run_id, ttl=30, now=now - 5)  # renewed 5 s ago: on time
        with pytest.raises(LeaseHeld, match=r"its process is gone: a resume is taken from it "
                                            r"in [67] s"):
            store.acquire(run_id, ttl=30)
        store.release(run_id, store.get(run_id).holder.token)
        with monkeypatch.context() as patch:
            patch.setattr(leases.os, "getpid", lambda: gone.pid)
            dead, _ = store.acquire(run_id, ttl=30, now=now - 15)  # missed its heartbeat
        taker, before = store.acquire(run_id, ttl=30)
        assert before.holder.token == dead.token and before.live()  # not expired, yet taken
        assert store.get(run_id).holder.token == taker.token
        with pytest.raises(LeaseHeld):  # held by this live process: refused as ever
            store.acquire(run_id, ttl=30, now=now + 20)
        assert store.release(run_id, taker.token)
        with monkeypatch.context() as patch:
            patch.setattr(leases.os, "getpid", lambda: gone.pid)
            patch.setattr(leases.socket, "gethostname", lambda: "another-machine")
            store.acquire(run_id, ttl=30, now=now - 15)
        with pytest.raises(LeaseHeld):  # another machine's pid says nothing here
            store.acquire(run_id, ttl=30)
