"""Full garbage collections wait for an idle UI (``snapstate_inspect/idle_gc.py``).

No timing: the tests check when a collection is allowed to run and that CPython's thresholds
are back after the app exits.
"""

from __future__ import annotations

import gc

from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.idle_gc import SAFETY_THRESHOLD, IdleCollector
from snapstate_inspect.model.background import Activity

from .conftest import settle


def make_due(collector: IdleCollector) -> None:
    """Run generation-1 collections until a full one is due."""
    while gc.get_count()[2] < collector.due_after:
        gc.collect(1)


def test_a_due_collection_waits_for_the_ui_to_be_idle():
    before = gc.get_threshold()
    activity = Activity()
    collector = IdleCollector(activity, idle=3600, share=1.0)
    collector.start()
    try:
        assert gc.get_threshold()[2] == SAFETY_THRESHOLD
        assert collector.due_after == before[2]
        make_due(collector)
        activity.touch()  # a key just now: not idle for an hour
        assert collector.tick() is False
        assert gc.get_count()[2] >= collector.due_after  # still due, not run
        collector.idle = 0.0  # now the UI counts as idle
        assert collector.tick() is True
        assert gc.get_count()[2] == 0  # the full collection ran
        assert collector.tick() is False  # nothing due any more
    finally:
        collector.stop()
    assert gc.get_threshold() == before


def test_full_collections_take_a_bounded_share_of_the_time():
    before = gc.get_threshold()
    collector = IdleCollector(Activity(), idle=0.0, share=1e-9)  # idle; ~forever between two
    collector.start()
    try:
        make_due(collector)
        assert collector.tick() is True
        make_due(collector)
        assert collector.tick() is False  # due and idle, but the last one was just now
        assert gc.get_count()[2] >= collector.due_after
    finally:
        collector.stop()
    assert gc.get_threshold() == before


async def test_the_app_collects_between_keys_and_restores_thresholds(reader):
    before = gc.get_threshold()
    app = SnapStateApp(reader)
    # busy for the test's length: the app's own timer collects nothing meanwhile (a
    # collection it ran while the test settles would make the next wait, longer under load)
    app.idle_gc.idle = 3600
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert gc.get_threshold()[2] == SAFETY_THRESHOLD
        await pilot.press("n")
        make_due(app.idle_gc)
        assert app.idle_gc.tick() is False
        app.idle_gc.idle = 0.0
        assert app.idle_gc.tick() is True
        assert app.idle_gc.collections >= 1
    assert gc.get_threshold() == before
