"""The diff actions inside the inspector app: mark a step and diff against it; a second file
(or run) opens the side-by-side comparison with the first divergence selected."""

from __future__ import annotations

import pytest

import snapstate_capture as snap
from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.screens.compare import CompareScreen
from snapstate_inspect.screens.step_diff import StepDiffScreen
from snapstate_inspect.widgets.aligned_timeline import AlignedTimeline
from snapstate_inspect.widgets.diff_view import DiffView
from tests.conftest import PROGRAMS, run_python

from .conftest import settle

SIZE = (160, 45)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    """The research agent in worlds a and b: one file each, and both runs in one file."""
    folder = tmp_path_factory.mktemp("worlds")
    paths = {"both": folder / "both.snap"}
    for world in ("a", "b"):
        paths[world] = folder / f"{world}.snap"
        for target in (paths[world], paths["both"]):
            done = run_python(str(PROGRAMS / "research_agent.py"), str(target), world)
            assert done.returncode == 0, done.stderr
    return paths


async def _until(pilot, ready):
    for _ in range(100):
        await settle(pilot)
        if ready():
            return
    raise AssertionError("the app did not get there")


async def test_mark_a_step_then_diff_the_selected_step_against_it(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d")  # nothing marked yet: a hint, no screen
        await settle(pilot)
        assert not isinstance(app.screen, StepDiffScreen)
        await pilot.press("n", "n", "m")
        await settle(pilot)
        assert app.diff_mark == (app.current_run.id, 2)
        for _ in range(8):
            await pilot.press("n")
        await settle(pilot)
        await pilot.press("d")
        await _until(pilot, lambda: isinstance(app.screen, StepDiffScreen)
                     and app.screen.result is not None)
        result = app.screen.result
        assert (result.a.index, result.b.index) == (2, 10)
        assert not result.identical
        text = app.screen.query_one(DiffView).text
        first = result.variables()[0][1]
        assert f"{first.name}" in text
        await pilot.press("q")
        await settle(pilot)
        assert not isinstance(app.screen, StepDiffScreen)
        assert app.selection.step == 10


async def test_second_file_opens_the_comparison_at_the_first_divergence(worlds):
    with snap.open_timeline(worlds["a"]) as ta, snap.open_timeline(worlds["b"]) as tb:
        app = SnapStateApp(ta, other=tb)
        async with app.run_test(size=SIZE) as pilot:
            await _until(pilot, lambda: isinstance(app.screen, CompareScreen)
                         and app.screen.shown is not None)
            timeline = app.screen.query_one(AlignedTimeline)
            row = timeline.rows[timeline.cursor]
            assert (row.a, row.b) == (3, 3)
            assert "~ result: 'page v1: the answer is 42' → 'page v2: the answer is 43'" in \
                app.screen.query_one(DiffView).text
            await pilot.press("escape")
            await settle(pilot)
            assert not isinstance(app.screen, CompareScreen)  # back in the inspector


async def test_second_run_of_one_file_and_the_compare_key(worlds):
    with snap.open_timeline(worlds["both"]) as timeline:
        first, second = timeline.runs
        app = SnapStateApp(timeline, compare_run=first.id[:6])
        async with app.run_test(size=SIZE) as pilot:
            await _until(pilot, lambda: isinstance(app.screen, CompareScreen)
                         and app.screen.result is not None)
            screen = app.screen
            assert (screen.run_a.id, screen.run_b.id) == (second.id, first.id)
            assert screen.result.first_divergence.a_step == 3
            await pilot.press("escape")
            await settle(pilot)
            await pilot.press("equals_sign")  # the run before the one on screen
            await _until(pilot, lambda: isinstance(app.screen, CompareScreen)
                         and app.screen.result is not None)
            assert app.screen.run_b.id == first.id


async def test_compare_key_with_nothing_to_compare(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("equals_sign")
        await settle(pilot)
        assert not isinstance(app.screen, CompareScreen)
