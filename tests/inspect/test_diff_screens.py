"""Pilot tests of the comparison screens: aligned timelines with the first divergence selected,
moving between divergent rows, the diff panel, and the step-diff screen."""

from __future__ import annotations

import asyncio
import contextlib
import io

import pytest
from textual.app import App

import snapstate_capture as snap
from snapstate_inspect.screens.compare import CompareScreen
from snapstate_inspect.screens.step_diff import StepDiffScreen
from snapstate_inspect.widgets.aligned_timeline import AlignedTimeline
from snapstate_inspect.widgets.diff_view import DiffView
from tests.conftest import PROGRAMS, run_python


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("screens")
    paths = {}
    for world in ("a", "b"):
        paths[world] = folder / f"{world}.snap"
        done = run_python(str(PROGRAMS / "research_agent.py"), str(paths[world]), world)
        assert done.returncode == 0, done.stderr
    return paths


class Host(App[None]):
    """A bare app showing one screen (the inspector app hosts these screens the same way)."""

    def __init__(self, make_screen):
        super().__init__()
        self.make_screen = make_screen

    def on_mount(self) -> None:
        self.push_screen(self.make_screen())


async def _settle(app, pilot, ready):
    for _ in range(200):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if ready():
            return
    raise AssertionError("the screen did not finish its work")


def test_compare_screen_selects_the_first_divergence(pair):
    asyncio.run(_first_divergence(pair))


@contextlib.asynccontextmanager
async def _comparing(pair):
    """Runs A and B of ``pair`` on the compare screen, its first alignment shown: yields
    ``(app, pilot, screen)``."""
    with snap.open_timeline(pair["a"]) as ta, snap.open_timeline(pair["b"]) as tb:
        app = Host(lambda: CompareScreen(ta.run(), tb.run()))
        async with app.run_test(size=(160, 40)) as pilot:
            screen = app.screen
            assert isinstance(screen, CompareScreen)
            await _settle(app, pilot, lambda: screen.shown is not None)
            yield app, pilot, screen


async def _first_divergence(pair):
    async with _comparing(pair) as (app, pilot, screen):
        timeline = screen.query_one(AlignedTimeline)
        row = timeline.rows[timeline.cursor]
        assert (row.a, row.b, row.status) == (3, 3, "state")
        text = screen.query_one(DiffView).text
        assert "~ result: 'page v1: the answer is 42' → 'page v2: the answer is 43'" in text
        title = str(screen.query_one("#compare-title").render())
        assert "first divergence: step 3 of A and step 3 of B" in title
        # Next divergent stretch: the two steps only B has.
        await pilot.press("n")
        await _settle(app, pilot, lambda: screen.shown is not None
                      and screen.shown.b.index == 6)
        row = timeline.rows[timeline.cursor]
        assert (row.a, row.b, row.status) == (None, 6, "inserted")
        assert "(no step here on this side" in screen.query_one(DiffView).text
        await pilot.press("n")
        assert timeline.rows[timeline.cursor].status == "state"
        await pilot.press("p", "p")
        assert timeline.rows[timeline.cursor].a == 3
        await pilot.press("home")
        await _settle(app, pilot, lambda: screen.shown is not None
                      and screen.shown.a.index == 0)
        assert timeline.rows[timeline.cursor].status == "same"
        assert "no differences in values" in screen.query_one(DiffView).text
        await pilot.press("f")
        assert timeline.cursor == screen.first_divergence_row()
        await pilot.press("escape")
        assert not isinstance(app.screen, CompareScreen)


def test_q_in_the_compare_screen_quits(pair):
    """``snapstate inspect A B`` opens the comparison; ``q`` quits there as everywhere (it
    closed the comparison), Escape goes back to the inspector."""
    asyncio.run(_quit(pair))


@contextlib.asynccontextmanager
async def _inspecting_both(pair, size=(160, 40)):
    """``snapstate inspect A B`` at ``size``, once its comparison is on screen: (app, pilot)."""
    from snapstate_inspect.app import SnapStateApp

    with snap.open_timeline(pair["a"]) as ta, snap.open_timeline(pair["b"]) as tb:
        app = SnapStateApp(ta, other=tb)
        async with app.run_test(size=size) as pilot:
            await _settle(app, pilot, lambda: isinstance(app.screen, CompareScreen))
            yield app, pilot


async def _quit(pair):
    from snapstate_inspect.screens.inspector import InspectorScreen

    async with _inspecting_both(pair) as (app, pilot):
        comparison = app.screen
        await _settle(app, pilot, lambda: comparison.result is not None)
        at = comparison.selected_a_step()  # the first divergence's row, selected on arrival
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, InspectorScreen)
        assert at and app.selection.step == at  # where the comparison was, not step 0
    async with _inspecting_both(pair) as (app, pilot):
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0  # set by App.exit: the app is quitting


def test_a_click_on_the_aligned_timeline_selects_the_row_clicked(pair):
    """A click selected the row below the one clicked (counted from the border)."""
    asyncio.run(_click(pair))


async def _click(pair):
    async with _comparing(pair) as (app, pilot, screen):
        timeline = screen.query_one(AlignedTimeline)
        await pilot.press("home")
        await _settle(app, pilot, lambda: timeline.cursor == 0)
        top = timeline.content_region.y - timeline.region.y
        assert top == 1 and int(timeline.scroll_offset.y) == 0
        await pilot.click(AlignedTimeline, offset=(6, top + 2))
        await _settle(app, pilot, lambda: timeline.cursor != 0)
        assert timeline.cursor == 2


def test_compare_screen_of_identical_runs(pair):
    asyncio.run(_identical(pair))


async def _identical(pair):
    with snap.open_timeline(pair["a"]) as ta:
        app = Host(lambda: CompareScreen(ta.run(), ta.run()))
        async with app.run_test(size=(120, 30)) as pilot:
            screen = app.screen
            await _settle(app, pilot, lambda: screen.shown is not None)
            assert screen.query_one(AlignedTimeline).cursor == 0
            assert "identical" in str(screen.query_one("#compare-title").render())
            assert {row.status for row in screen.rows} == {"same"}


def test_step_diff_screen_shows_the_changes(pair):
    asyncio.run(_step_diff(pair))


async def _step_diff(pair):
    with snap.open_timeline(pair["a"]) as ta:
        steps = ta.run().steps
        app = Host(lambda: StepDiffScreen(steps[0], steps[-1]))
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.screen
            await _settle(app, pilot, lambda: screen.result is not None)
            text = screen.query_one(DiffView).text
            assert "plan[0]['status']: 'todo' → 'done'" in text
            assert "+ result: str '42'" in text
            title = str(screen.query_one("#stepdiff-title").content)
            lines = title.splitlines()  # one line per step: a real break, not an escaped '\\n'
            assert "\\n" not in title and len(lines) == 3, title
            assert lines[1].startswith("A: run ") and lines[2].startswith("B: run "), title
            await pilot.press("q")
            assert not isinstance(app.screen, StepDiffScreen)


def _long_run(path, diverge_at):
    with snap.record(path, name="long"):
        for i in range(150):
            snap.checkpoint("turn", value=i if i != diverge_at else -1)


def test_the_first_divergence_far_down_is_scrolled_into_view(tmp_path):
    """The diff panel showed the first divergence (row 120) while the aligned timeline stayed
    at rows 0-25 (the scroll was clamped to the size before the rows came), and ``f`` on it
    did not bring it into view either."""
    _long_run(tmp_path / "a.snap", diverge_at=None)
    _long_run(tmp_path / "b.snap", diverge_at=120)
    asyncio.run(_far_down(tmp_path))


async def _far_down(tmp_path):
    with snap.open_timeline(tmp_path / "a.snap") as ta, \
            snap.open_timeline(tmp_path / "b.snap") as tb:
        app = Host(lambda: CompareScreen(ta.run(), tb.run()))
        async with app.run_test(size=(160, 30)) as pilot:
            screen = app.screen
            await _settle(app, pilot, lambda: screen.shown is not None)
            timeline = screen.query_one(AlignedTimeline)

            def in_view():
                top = int(timeline.scroll_offset.y)
                return top <= timeline.cursor < top + timeline.scrollable_content_region.height

            assert timeline.cursor >= 120
            await _settle(app, pilot, in_view)
            await pilot.press("home")
            await _settle(app, pilot, lambda: timeline.cursor == 0)
            timeline.scroll_to(y=0, animate=False, immediate=True)
            first = screen.first_divergence_row()
            timeline.move_to(first)  # as `f` does when the cursor is already there
            timeline.scroll_to(y=0, animate=False, immediate=True)
            timeline.move_to(first)
            await _settle(app, pilot, in_view)


def test_the_comparisons_footer_fits_80_columns(pair):
    """The compare screen had Textual's own footer: at 80 columns it ended "esc C▏^p palette",
    Close cut and Quit gone. It has the inspector's, with its keys' short labels there."""
    asyncio.run(_narrow_footer(pair))


async def _narrow_footer(pair):
    from textual.widgets._footer import FooterKey

    from snapstate_inspect.widgets.footer import KeysFooter

    async with _inspecting_both(pair, size=(80, 24)) as (app, _):
        footer = app.screen.query_one(KeysFooter)
        keys = list(footer.query(FooterKey))
        assert footer.max_scroll_x == 0 and all(key.region.right <= 80 for key in keys)
        assert [key.description for key in keys] == ["First", "Next", "Prev", "Close", "Help",
                                                      "Quit"]


def test_question_mark_lists_the_keys_of_the_comparison_and_of_a_step_diff(pair):
    """``?`` did nothing on the comparison and on a step diff (it is the inspector's help
    key): it opens a help of that screen's own keys, and Escape goes back to it."""
    asyncio.run(_help_keys(pair))


async def _help_keys(pair):
    from rich.console import Console

    from snapstate_inspect.screens.help import HelpScreen

    def shown(app) -> str:
        console = Console(width=100, file=io.StringIO(), record=True)
        console.print(app.screen.table)
        return console.export_text() + str(app.screen.query_one("#help-title").render())

    async with _inspecting_both(pair, size=(80, 24)) as (app, pilot):
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = shown(app)
        assert "Comparing two runs" in text and "Next divergence" in text and "PgUp" in text
        assert "Go to step" not in text  # the inspector's keys are not this screen's
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, CompareScreen)
    with snap.open_timeline(pair["a"]) as ta:
        steps = ta.run().steps
        app = Host(lambda: StepDiffScreen(steps[0], steps[-1]))
        async with app.run_test(size=(100, 30)) as pilot:
            await _settle(app, pilot, lambda: app.screen.result is not None)
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            assert "Diff of two steps" in shown(app) and "Scroll the diff" in shown(app)
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, StepDiffScreen)
