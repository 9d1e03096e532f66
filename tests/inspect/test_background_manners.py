"""Background scans step aside while a person uses the UI (``model/background.py``).

No timing: the tests check who waits for whom. A worker thread's ``step_aside`` keeps waiting
while the UI was used within ``quiet`` seconds (until cancelled); the UI thread never waits;
keys tell the app's ``Activity``; a large preview's decode stops to step aside.
"""

from __future__ import annotations

import json
import threading

from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.model.background import Activity
from snapstate_inspect.model.piecewise_json import STEP_ASIDE_EVERY
from snapstate_inspect.model.piecewise_json import loads as piecewise_loads

from .conftest import settle


def test_a_worker_waits_while_the_ui_is_in_use_until_cancelled():
    activity = Activity(quiet=3600)  # "in use" for the whole test
    activity.touch()  # on this (the "UI") thread
    polls = []
    release = threading.Event()

    def cancelled() -> bool:
        polls.append(1)
        if len(polls) >= 3:
            release.set()
        return release.is_set()

    worker = threading.Thread(target=activity.pause, args=(cancelled,))
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert len(polls) >= 3  # it kept waiting, asking whether it was cancelled


def test_the_ui_thread_never_waits_and_a_quiet_ui_lets_workers_run():
    activity = Activity(quiet=3600)
    activity.touch()
    asked = []
    activity.step_aside(lambda: asked.append(1) or False)  # the UI thread: returns at once
    assert asked == []
    idle = Activity(quiet=3600)  # never touched: not busy
    assert not idle.busy()
    done = []
    worker = threading.Thread(target=lambda: (idle.pause(lambda: False), done.append(1)))
    worker.start()
    worker.join(timeout=30)
    assert done == [1]


def test_large_preview_decode_steps_aside_and_decodes_the_same():
    preview = {"type": "builtins.list", "len": 3000,
               "children": [[f"[{n}]", {"type": "builtins.int", "repr": str(n)}]
                            for n in range(3000)]}
    text = json.dumps(preview)
    calls = []
    assert piecewise_loads(text, lambda: calls.append(1)) == preview
    assert len(calls) == 3000 // STEP_ASIDE_EVERY  # between children, every so many


async def test_keys_and_clicks_mark_the_ui_in_use(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        app.activity.quiet = 3600
        assert not app.activity.busy()  # nothing pressed yet
        await pilot.press("n")
        assert app.activity.busy()
        app.activity._last = float("-inf")
        await pilot.click("#timeline")
        assert app.activity.busy()
        assert app.loader.activity is app.activity  # large previews step aside too


def test_a_scan_waits_only_for_keys_pressed_after_it_started():
    import time

    activity = Activity(quiet=3600)
    activity.touch()  # the key that asks for the scan
    since = time.monotonic()  # the scan starts
    polls = []
    worker = threading.Thread(target=activity.pause,
                              args=(lambda: polls.append(1) or False, since))
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive() and polls == []  # did not wait for the key that started it
    activity.touch()  # a later key: now it steps aside
    assert activity.busy(since)
    worker = threading.Thread(target=activity.pause,
                              args=(lambda: polls.append(1) or len(polls) >= 3, since))
    worker.start()
    worker.join(timeout=30)
    assert len(polls) >= 3


async def test_next_change_is_not_held_up_by_its_own_key(reader):
    """``V`` scanning back to step 0 asks whether to step aside, and the key that started it
    never counts as a reason, although the UI counts as in use for an hour after each key.
    (A spy answers "not busy" after noting the real answer, so a failure cannot hang.)"""
    from .test_views import select_variable

    app = SnapStateApp(reader)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        app.activity.quiet = 3600
        ui_thread = threading.get_ident()
        asked, would_wait = [], []
        real_busy = app.activity.busy

        def spy(since=None) -> bool:
            if threading.get_ident() != ui_thread:
                asked.append(since)
                if real_busy(since):
                    would_wait.append(since)
            return False

        app.activity.busy = spy
        app.go(6, jump=True)
        await settle(pilot)
        await select_variable(pilot, "memory")
        for _ in range(3):
            await pilot.press("V")
            await settle(pilot)
        assert app.selection.step == 0
        assert "no earlier change of memory" in app.screen._note
        assert asked, "the scan never asked whether to step aside"
        assert would_wait == [], "the scan waited for the key that started it"
