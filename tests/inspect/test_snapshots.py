"""SVG snapshots of the inspector's screens at 160x45, from a timeline recorded with a fixed clock
and run id (``agent.record_fixed``), so every machine draws the same picture.

Regenerate on purpose with ``pytest tests/inspect/test_snapshots.py --snapshot-update`` and look
at the new SVGs before committing them.
"""

from __future__ import annotations

import pytest

import snapstate_capture as snap
from snapstate_inspect.app import SnapStateApp
from .agent import record_fixed
from .conftest import settle
from .test_views import select_variable

SIZE = (160, 45)


@pytest.fixture(scope="module")
def fixed_file(tmp_path_factory):
    return record_fixed(tmp_path_factory.mktemp("fixed") / "agent.snap")


@pytest.fixture
def app(fixed_file):
    reader = snap.open_timeline(fixed_file)
    yield SnapStateApp(reader)
    reader.close()


def test_main_screen_at_an_exception(snap_compare, app):
    async def before(pilot):
        await settle(pilot)
        for key in ("x",):
            await pilot.press(key)
            await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_main_screen_with_an_expanded_value_and_changes(snap_compare, app):
    async def before(pilot):
        await settle(pilot)
        for key in ("g", "1", "3", "enter"):
            await pilot.press(key)
        await settle(pilot)
        await select_variable(pilot, "memory")
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_help_screen(snap_compare, app):
    async def before(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_variable_history_screen(snap_compare, app):
    async def before(pilot):
        await settle(pilot)
        for key in ("g", "6", "enter"):
            await pilot.press(key)
        await settle(pilot)
        await select_variable(pilot, "memory")
        await pilot.press("h")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=before)
