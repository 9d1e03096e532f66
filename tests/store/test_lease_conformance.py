"""Resume leases on every engine (issue 17 point 4 over ``store.engine``): one holder at a time,
expiry, the claim that makes a run's one continuation — on a timeline file and on a real
PostgreSQL store alike; a waiting run's pause reads back the same."""

from __future__ import annotations

import time

import pytest

import snapstate_capture as snap
from snapstate_capture.store.leases import LeaseHeld, LeaseLost, LeaseStore
from snapstate_capture.store.writer import TimelineWriter


def test_one_holder_one_continuation_on_every_engine(store_location):
    with snap.record(store_location, name="waits") as block:
        snap.checkpoint("start")
    run_id = block.run_id
    with LeaseStore(store_location) as first, LeaseStore(store_location) as second:
        dead, before = first.acquire(run_id, ttl=30, now=time.time() - 60)  # expired at once
        assert before is None
        holder, before = second.acquire(run_id, user="bob", ttl=30)
        assert before.holder.token == dead.token and not before.live()
        with pytest.raises(LeaseHeld, match=r"is being resumed by bob@"):
            first.acquire(run_id, ttl=30)
        assert first.renew(run_id, dead.token) is False
        assert second.renew(run_id, holder.token, ttl=30) is True
        writer = TimelineWriter(store_location)
        try:
            with pytest.raises(LeaseLost):
                writer.begin_run(name="c", entry={}, env={}, claim=(run_id, dead.token))
            continuation = writer.begin_run(name="c", entry={}, env={}, parent=(run_id, 0),
                                            claim=(run_id, holder.token))
            with pytest.raises(LeaseLost):  # once only
                writer.begin_run(name="c2", entry={}, env={}, claim=(run_id, holder.token))
        finally:
            writer.close()
        assert second.release(run_id, holder.token) is True
        assert first.get(run_id).holder is None
    with snap.open_timeline(store_location) as timeline:
        assert [r.name for r in timeline.runs] == ["waits", "c"]
        assert timeline.run(run_id).continued_as == continuation
        assert timeline.leases()[run_id].continued_as == continuation


def test_a_waiting_run_and_its_pause_read_back_on_every_engine(store_location):
    with pytest.raises(SystemExit) as stopped:
        with snap.record(store_location, name="asks"):
            snap.wait_for("approval", prompt="Ship it?", schema={"type": "boolean"})
    assert stopped.value.code == snap.EXIT_PAUSED
    with snap.open_timeline(store_location) as timeline:
        (run,) = timeline.runs
        assert run.status == "waiting" and run.error is None
        assert (run.pause["name"], run.pause["prompt"]) == ("approval", "Ship it?")
        assert run.pause["schema"]["json"] == {"type": "boolean"}
        assert run.steps[run.pause["step"]].kind == "waiting"
        assert run.continued_as is None


def test_the_lease_time_follows_the_environment_each_time_it_is_read(monkeypatch):
    from snapstate_capture.store.leases import DEFAULT_LEASE_SECONDS, LEASE_ENV, lease_seconds

    monkeypatch.setenv(LEASE_ENV, "5")
    assert lease_seconds() == 5.0
    monkeypatch.setenv(LEASE_ENV, "7.5")
    assert lease_seconds() == 7.5
    for ignored in ("0", "-3", "soon", ""):
        monkeypatch.setenv(LEASE_ENV, ignored)
        assert lease_seconds() == DEFAULT_LEASE_SECONDS
