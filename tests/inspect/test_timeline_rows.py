"""What the timeline's rows show: kind markers, and failures marked as failures."""

from __future__ import annotations

import snapstate_capture as snap
from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.widgets.timeline import MARKERS, RAISED_EFFECT_MARKER, TimelineView

from .conftest import settle

SIZE = (120, 36)


def _record_effects(path):
    """One run: an effect that answers, one whose call raises (caught by the program, so no
    ``exception`` step follows it), and an exception that ends the run."""

    @snap.effect
    def fetch(url):
        if "down" in url:
            raise ConnectionError("503: " + url)
        return {"url": url}

    try:
        with snap.record(path, name="effects"):
            snap.checkpoint("start")
            fetch("http://up")
            try:
                fetch("http://down")
            except ConnectionError:
                pass
            snap.checkpoint("retried")
            raise ValueError("gave up")
    except ValueError:
        pass
    return path


def _row(timeline: TimelineView, index: int) -> list:
    """The segments drawn for step ``index`` (a row on screen: the run is shorter than it)."""
    return list(timeline.render_line(index - int(timeline.scroll_offset.y)))


def _marker(segments: list):
    """The kind marker's segment of a row (the one right after the time offset)."""
    markers = {*MARKERS.values(), RAISED_EFFECT_MARKER}
    return next(s for s in segments if s.text.strip() in markers)


async def test_an_effect_whose_call_raised_is_marked_as_a_failure(tmp_path):
    """It kept the plain effect marker ``⇄``: only ``x`` found it. It has its own marker now,
    in the colour of exception steps; an effect that answered keeps ``⇄``, uncoloured."""
    path = _record_effects(tmp_path / "effects.snap")
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        kinds = [step.kind for step in run.steps]
        answered, raised = [i for i, kind in enumerate(kinds) if kind == "effect"]
        ended = kinds.index("exception")
        assert run.raised_effect_steps() == [raised]
        app = SnapStateApp(timeline)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            view = app.screen.query_one(TimelineView)
            assert view.cursor not in (answered, raised, ended)
            failed = _marker(_row(view, raised))
            exception = _marker(_row(view, ended))
            plain = _marker(_row(view, answered))
            assert failed.text.strip() == RAISED_EFFECT_MARKER != MARKERS["exception"]
            assert exception.text.strip() == MARKERS["exception"]
            assert plain.text.strip() == MARKERS["effect"]
            assert failed.style.color == exception.style.color != plain.style.color


async def test_a_click_selects_the_row_clicked(reader):
    """A click selected the step below the one clicked (the row counted from the border); a
    click on the border selects nothing."""
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = app.screen.query_one(TimelineView)
        top = view.content_region.y - view.region.y  # the border's rows
        assert top == 1 and int(view.scroll_offset.y) == 0
        await pilot.click(TimelineView, offset=(8, top + 5))
        await settle(pilot)
        assert app.selection.step == view.cursor == 5
        await pilot.click(TimelineView, offset=(8, 0))
        await settle(pilot)
        assert app.selection.step == 5


async def test_the_timeline_never_scrolls_sideways(reader):
    """Its rows are cut to the panel's width; the virtual width was the widget's, wider than
    the region left beside the vertical scrollbar, so a one-row horizontal scrollbar took a
    row of the panel (stray glyphs under tmux)."""
    app = SnapStateApp(reader)
    async with app.run_test(size=(120, 20)) as pilot:  # fewer rows than steps: scrolls down
        await settle(pilot)
        view = app.screen.query_one(TimelineView)
        assert view.max_scroll_y > 0
        assert view.max_scroll_x == 0 and not view.show_horizontal_scrollbar


async def test_the_cursor_rows_label_is_drawn_in_the_cursors_colours(tmp_path):
    """The label's colour (warning) is the focused cursor's background (accent) in the dark
    theme: on the cursor row the label could not be seen."""
    path = _record_effects(tmp_path / "effects.snap")
    with snap.open_timeline(path) as timeline:
        labelled = next(step.index for step in timeline.runs[-1].steps if step.label)
        app = SnapStateApp(timeline)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            view = app.screen.query_one(TimelineView)
            view.focus()
            view.cursor = labelled
            await settle(pilot)
            label = next(s for s in _row(view, labelled) if s.text.strip() and
                         s.text.strip() in str(timeline.runs[-1].steps[labelled].label))
            assert label.style.color != label.style.bgcolor
            assert label.style.color == _marker(_row(view, labelled)).style.color


async def test_a_module_body_row_names_its_file(tmp_path):
    """Traced into a package, every module body's row read ``<module>`` alike; it names its
    file now (``<module> helper.py``), and a function's row is as it was."""
    from snapstate_inspect.widgets.stack import frame_text
    from tests.conftest import run_cli

    (tmp_path / "helper.py").write_text("VALUE = 3\n\ndef double(x):\n    return 2 * x\n")
    (tmp_path / "main.py").write_text("import helper\nprint(helper.double(2))\n")
    path = tmp_path / "main.snap"
    assert run_cli("record", "--trace", "calls", "-o", str(path), "main.py",
                   cwd=tmp_path).returncode == 0
    with snap.open_timeline(path) as timeline:
        steps = list(timeline.runs[-1].steps)
        modules = {s.filename.rsplit("/", 1)[-1]: s.index for s in steps
                   if s.function == "<module>" and s.kind == "call"}
        double = next(s.index for s in steps if s.function == "double")
        app = SnapStateApp(timeline)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            view = app.screen.query_one(TimelineView)
            for name, index in modules.items():
                shown = "".join(segment.text for segment in _row(view, index))
                assert f"<module> {name}" in shown, shown
            assert sorted(modules) == ["helper.py", "main.py"]
            shown = "".join(segment.text for segment in _row(view, double))
            assert "double" in shown and "<module>" not in shown, shown
        # its call step is at line 0 (CPython 3.11, before the first line runs): the stack
        # and `snapstate show` name the file alone, not "main.py:0"
        start = timeline.runs[-1].steps[modules["main.py"]]
        assert start.lineno == 0
        assert frame_text(0, start.frames[-1]).plain == "#0 <module>  main.py"
    shown = run_cli("show", str(path), str(modules["main.py"]), cwd=tmp_path).stdout
    assert "main.py" in shown and "main.py:0" not in shown, shown
