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
