"""Fixtures for the inspector's tests: a recorded agent timeline and a way to let the app settle."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import snapstate_capture as snap

from .agent import record_agent


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run ``async def`` tests in a fresh event loop (no asyncio plugin needed)."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        kwargs = {name: pyfuncitem.funcargs[name] for name in names}
        asyncio.run(pyfuncitem.obj(**kwargs))
        return True
    return None


@pytest.fixture(scope="session")
def agent_file(tmp_path_factory):
    """Path of a timeline recorded from ``tests/inspect/agent.py`` (one failed run, 29 steps)."""
    return record_agent(tmp_path_factory.mktemp("agent") / "agent.snap")


@pytest.fixture
def reader(agent_file):
    timeline = snap.open_timeline(agent_file)
    yield timeline
    timeline.close()


async def settle(pilot) -> None:
    """Wait until the app has handled every message and finished its worker threads."""
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


class ServiceDown(Exception):
    """What the service of ``record_failing_fetches`` raises."""


def record_failing_fetches(path, attempts: int = 2):
    """Record into ``path`` an effect ``fetch`` that raises ``ServiceDown`` (``… HTTP 503
    Service Unavailable``) at each of ``attempts`` tries, each followed by a checkpoint
    ``retrying``: the 503 is only in the effect steps' values, never in a local."""

    @snap.effect(name="fetch")
    def fetch(url):
        raise ServiceDown(f"{url}: HTTP 503 Service Unavailable")

    with snap.record(path, name="down"):
        for attempt in range(attempts):
            try:
                fetch("https://example.invalid/report")
            except ServiceDown:
                snap.checkpoint("retrying", attempt=attempt)
    return path
