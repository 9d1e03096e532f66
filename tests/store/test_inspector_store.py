"""The inspector on a shared store (a real PostgreSQL): the runs screen lists the store's runs
(name, status, user, host, start, duration, parent), filters and searches them, pages lazily
through 100,000 runs, and a run still being recorded by another process is followed live."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

import snapstate_capture as snap
from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.screens.store_runs import StoreRunsScreen
from snapstate_inspect.widgets.run_table import RunTable

from ..conftest import ROOT
from ..inspect.conftest import settle
from .many_runs import fill_runs


@pytest.fixture
def pg_store(pg_server):
    return pg_server.create_database(f"insp_{time.monotonic_ns()}")


def _record(url: str, name: str, fail: bool = False) -> str:
    try:
        with snap.record(url, name=name):
            plan = ["search", "read"]
            for i, item in enumerate(plan):
                snap.checkpoint(item, n=i)
            if fail:
                raise ValueError("planted")
    except ValueError:
        pass
    with snap.open_timeline(url) as timeline:
        return timeline.run().id


def _table(app) -> RunTable:
    screen = app.screen
    assert isinstance(screen, StoreRunsScreen)
    return screen.query_one(RunTable)


async def test_the_runs_screen_lists_filters_and_opens_store_runs(pg_store):
    fill_runs(pg_store, 30)
    good = _record(pg_store, "triage-agent")
    bad = _record(pg_store, "billing-agent", fail=True)
    reader = snap.open_timeline(pg_store)
    try:
        app = SnapStateApp(reader)
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(pilot)
            table = _table(app)  # a store opens on its runs, newest first
            assert table.runs.count == 32
            top = table.runs.row(0)
            assert (top.run.id, top.name, top.status) == (bad, "billing-agent", "failed")
            assert top.user and top.host and top.duration != "-"
            drawn = "\n".join(table.render_line(y).text for y in range(3))
            assert "billing-agent" in drawn and "failed" in drawn and top.user in drawn
            # the filter box: words and field:value terms
            await pilot.press("slash")
            for key in "triage":
                await pilot.press(key)
            await pilot.press("enter")
            await settle(pilot)
            assert table.runs.count == 1 and table.runs.row(0).run.id == good
            assert "1 run matching triage" in str(app.screen.query_one("#store-runs-count")
                                                  .render())
            await pilot.press("slash", *["backspace"] * 6, *"status:failed", "enter")
            await settle(pilot)
            failed = table.runs.count
            assert failed == 1 + sum(1 for n in range(30) if n % 4 == 3)
            assert {table.runs.row(i).status for i in range(failed)} == {"failed"}
            # a fork shows its parent; Enter shows the run under the cursor
            await pilot.press("slash", *["backspace"] * 13, "enter")
            await settle(pilot)
            await pilot.press("down", "enter")
            await settle(pilot)
            assert not isinstance(app.screen, StoreRunsScreen)
            assert app.current_run.id == good and app.step_count() == 2
            await pilot.press("r")  # the runs screen again, on the run shown
            await settle(pilot)
            assert _table(app).cursor == 1
            await pilot.press("f")  # status filter: running
            await settle(pilot)
            assert _table(app).runs.count == 0
    finally:
        reader.close()


async def test_a_store_of_100000_runs_opens_and_pages_reading_a_few_pages(pg_store):
    rows = fill_runs(pg_store, 100_000)
    reader = snap.open_timeline(pg_store)
    try:
        app = SnapStateApp(reader)
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(pilot)
            table = _table(app)
            assert table.runs.count == 100_000
            assert reader._runs is None  # the store was never read whole
            assert table.runs.row(0).name == "job-99999"
            first = table.runs.queries
            await pilot.press("pagedown", "pagedown")
            await settle(pilot)
            assert table.cursor > 40 and table.runs.queries == first  # still the first page
            await pilot.press("end")  # the oldest run: one offset look-up and one page
            await settle(pilot)
            assert table.cursor == 99_999
            oldest = table.runs.row(99_999)
            assert (oldest.run.id, oldest.name) == (rows[0]["id"], "job-0")
            assert table.runs.queries <= first + 3
            assert "job-0" in "".join(table.render_line(y).text
                                      for y in range(table.size.height))
            await pilot.press("up")
            await settle(pilot)
            assert table.runs.row(table.cursor).name == "job-1"
            fork = table.runs.row(100_000 - 1000)  # job-999, a fork of job-998
            assert fork.name == "job-999" and fork.parent == f"{rows[998]['id'][:8]}@2"
    finally:
        reader.close()


FOLLOWED = """
import sys, time
from pathlib import Path
import snapstate_capture as snap
url, go = sys.argv[1], Path(sys.argv[2])
with snap.record(url, name="live-agent"):
    for i in range(4):
        snap.checkpoint("early", n=i)
    Path(str(go) + ".ready").write_text("")
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    for i in range(6):
        snap.checkpoint("late", n=i)
"""


async def test_a_run_recorded_by_another_process_is_followed_live(pg_store, tmp_path):
    fill_runs(pg_store, 3)
    go = tmp_path / "go"
    child = subprocess.Popen([sys.executable, "-c", FOLLOWED, pg_store, str(go)],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "go.ready").exists():
            assert child.poll() is None and time.monotonic() < deadline, child.stderr.read()
            time.sleep(0.05)
        # The recorder's steps reach the store through its spool writer: a moment later.
        while True:
            reader = snap.open_timeline(pg_store)
            live = reader.run()
            if live.name == "live-agent" and len(live.steps) == 4:
                break
            reader.close()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert live.status == "running"
        app = SnapStateApp(reader, run_id=live.id[:8])
        async with app.run_test(size=(140, 36)) as pilot:
            await settle(pilot)
            assert app.follow and app.step_count() == 4
            go.write_text("")
            assert child.wait(timeout=60) == 0, child.stderr.read()
            for _ in range(100):
                await pilot.pause(0.1)
                if app.current_run.status == "finished" and app.step_count() == 10:
                    break
            assert app.step_count() == 10 and app.current_run.status == "finished"
            assert app.selection.step == 9  # following: the newest step is shown
        reader.close()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
