"""Retry policies (issue 17 point 3) in one process: validation, back-off with a server's
``retry_after``, and async effects awaiting short back-offs."""

from __future__ import annotations

import asyncio

import pytest

import snapstate_capture as snap


class Busy(Exception):
    def __init__(self, retry_after=None):
        super().__init__(retry_after)
        self.retry_after = retry_after


def test_a_policy_is_checked_and_honours_retry_after():
    with pytest.raises(TypeError):
        snap.Retry(on=(int,))
    with pytest.raises(ValueError):
        snap.Retry(max_attempts=0)
    policy = snap.Retry(on=Busy, backoff=0.5, max_attempts=3)
    assert policy.on == (Busy,)
    assert policy.delay(1, Busy()) == 0.5 and policy.delay(1, Busy(retry_after=7)) == 7.0
    assert policy.retries(Busy(), 2) and not policy.retries(Busy(), 3)
    assert not policy.retries(ValueError(), 1)


def test_async_effects_retry_in_a_record_block_and_replay(snap_path, monkeypatch):
    monkeypatch.setenv("SNAPSTATE_HOLD_SECONDS", "30")
    calls = []

    @snap.effect(name="flaky", retry=snap.Retry(on=(Busy,), backoff=0.01, max_attempts=3))
    async def flaky(n):
        calls.append(n)
        if len(calls) < 3:
            raise Busy()
        return n * 2

    async def main():
        with snap.record(snap_path, name="async-retry"):
            return await flaky(21)

    assert asyncio.run(main()) == 42 and calls == [21, 21, 21]
    with snap.open_timeline(snap_path) as timeline:
        run = timeline.runs[-1]
        assert run.status == "finished"
        effects = [s for s in run.steps if s.kind == "effect" and s.label == "flaky"]
        assert ["exception" in s.extra for s in effects] == [True, True, False]
        sleeps = [s for s in run.steps if s.label == "sleep_until"]
        assert [s.kind for s in sleeps] == ["waiting", "effect"] * 2
    with pytest.raises(Busy):  # out of attempts: the last failure is raised
        calls.clear()
        policy = snap.Retry(on=(Busy,), backoff=0, max_attempts=2)

        @snap.effect(retry=policy)
        def always_busy():
            calls.append(1)
            raise Busy()

        always_busy()
    assert calls == [1, 1]
