"""Pilot tests for how a navigation key is handled: what it redraws (issue 4, point 6).

Speed itself is measured by ``bench/bench_inspector.py``; these tests pin down the behaviour
that makes a key cheap, so it cannot quietly come back: a step key repaints the panels that
show the step, never the whole screen.
"""

from __future__ import annotations

from textual._compositor import LayoutUpdate

from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.widgets.status import StatusBar
from snapstate_inspect.widgets.timeline import TimelineView

from .conftest import settle

SIZE = (120, 36)


def record_frames(app) -> list:
    """Every frame the app draws from now on (``App._display`` gets each rendered update)."""
    frames: list = []
    original = app._display

    def display(screen, renderable) -> None:
        frames.append(renderable)
        original(screen, renderable)

    app._display = display
    return frames


async def test_a_step_key_repaints_only_what_changed(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        frames = record_frames(app)
        for key in ("n", "n", "p", "o", "x", "less_than_sign"):
            await pilot.press(key)
            await settle(pilot)
        drawn = [frame for frame in frames if frame is not None]
        assert drawn, "the keys drew nothing"
        full = [frame for frame in drawn if isinstance(frame, LayoutUpdate)]
        assert full == [], f"{len(full)} of {len(drawn)} frames repainted the whole screen"
        assert app.selection.step == 0
        assert "step 0 of 29" in app.screen.query_one(StatusBar)._text.plain



def styled_lines(widget) -> list[list[tuple[str, object]]]:
    """The widget's lines, text and style per segment, as the compositor would take them now
    (from the widget's render caches)."""
    return [[(segment.text, segment.style) for segment in strip]
            for strip in widget.render_lines(widget.size.region)]


async def test_moving_the_cursor_redraws_both_rows_and_nothing_stale(reader):
    """A cursor move without a scroll redraws just the old and the new row: what is drawn
    then equals a redraw of the whole panel from scratch."""
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        timeline = app.screen.query_one(TimelineView)
        for key in ("n", "n", "n", "p", "o"):
            top = timeline.scroll_offset.y
            await pilot.press(key)
            await settle(pilot)
            assert timeline.scroll_offset.y == top  # no scroll: the two-row path
            drawn = styled_lines(timeline)
            timeline._strips.clear()
            timeline._styles_cache.clear()
            assert drawn == styled_lines(timeline), f"a stale row after {key!r}"
        assert app.selection.step > 0


async def test_a_near_change_is_found_at_once_a_far_one_in_a_worker(reader):
    from .test_views import select_variable

    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.go(6, jump=True)
        await settle(pilot)
        await select_variable(pilot, "memory")
        screen = app.screen
        handed_over = []
        screen._change_worker = lambda *args: handed_over.append(args)
        await pilot.press("v")  # memory grows once per round: 6 -> 13, within NEAR_STEPS
        await settle(pilot)
        assert app.selection.step == 13 and handed_over == []
        app.go(27, jump=True)  # memory's last change: the near look finds nothing later
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert app.selection.step == 27
        assert len(handed_over) == 1 and handed_over[0][1:] == (27, False)
        assert "looking for the next change of memory" in screen._note
