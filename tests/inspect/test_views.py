"""Pilot tests of the views around navigation: variable changes and history, search, runs,
live follow, help and palette, big values, and text from the file shown literally."""

from __future__ import annotations

import threading

import snapstate_capture as snap
from snapstate_inspect import keymap
from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.screens.help import HelpScreen
from snapstate_inspect.screens.history import VariableHistoryScreen
from snapstate_inspect.screens.runs import RunsScreen
from snapstate_inspect.screens.search import SearchScreen
from snapstate_inspect.widgets.variables import VariablesView

from tests.conftest import record_traced_loop

from .conftest import record_failing_fetches, settle
from .test_navigation import SIZE, labels, press


async def select_variable(pilot, name: str) -> None:
    tree = pilot.app.screen.query_one(VariablesView)
    tree.focus()
    for line in range(tree.last_line + 1):
        node = tree.get_node_at_line(line)
        if node is not None and node.data is not None and node.data.key is not None \
                and node.data.key.name == name and not node.data.key.path:
            tree.cursor_line = line
            break
    await settle(pilot)
    assert pilot.app.variable is not None and pilot.app.variable.name == name


async def test_next_and_previous_change_of_a_variable(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "g", "6", "enter")
        await select_variable(pilot, "memory")
        await press(pilot, "v")  # memory grows once per round: 6, 13, 20, 27
        assert app.selection.step == 13
        await press(pilot, "v")
        assert app.selection.step == 20
        await press(pilot, "V", "V")
        assert app.selection.step == 6
        await press(pilot, "V")  # memory was added (an empty list) at step 0
        assert app.selection.step == 0
        await press(pilot, "V")
        assert app.selection.step == 0  # nothing earlier: stays


async def test_history_of_a_traced_loop_lists_every_change(tmp_path):
    """A run recorded by the tracer: ``h`` looks inside the trace chunks (it said "steps
    recorded by --trace are not searched yet"), and the first change is selected."""
    path = tmp_path / "traced.snap"

    record_traced_loop(path, 5)
    reader = snap.open_timeline(path)
    run = reader.runs[-1]
    totals = [step.index for step in run.steps if step.function == "_summing_loop"
              and "total" in step.frames[-1].locals]
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "g", "8", "enter")
        await select_variable(pilot, "total")
        await press(pilot, "h")
        screen = app.screen
        assert isinstance(screen, VariableHistoryScreen)
        await settle(pilot)
        values = [screen.query_one("#history-list").get_option_at_index(i).prompt.plain
                  for i in range(len(screen.changes))]
        # total: added as 0, then 0+1, +2, +3, +4 (adding i=0 changes nothing)
        assert [text.split("→")[-1].strip() for text in values] == ["0", "1", "3", "6", "10"]
        assert screen.changes[0].step == totals[0]
        label = str(screen.query_one("#history-progress").render())
        assert label == "5 changes"
        await press(pilot, "down", "enter")
        assert app.selection.step == screen.changes[1].step
    reader.close()


async def test_variable_history_lists_changes_and_jumps(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "g", "6", "enter")
        await select_variable(pilot, "memory")
        await press(pilot, "h")
        screen = app.screen
        assert isinstance(screen, VariableHistoryScreen)
        await settle(pilot)
        steps = [change.step for change in screen.changes]
        assert steps == [0, 6, 13, 20, 27]
        options = screen.query_one("#history-list")
        text = options.get_option_at_index(2).prompt.plain
        assert text.startswith("step       13") and "→" in text and "~" in text
        options.highlighted = 3
        await press(pilot, "enter")
        assert not isinstance(app.screen, VariableHistoryScreen)
        assert app.selection.step == 20


async def test_search_runs_in_background_and_marks_hits(reader, monkeypatch):
    from snapstate_inspect.screens import search

    monkeypatch.setattr(search, "SHOWN", 3)  # the list stops there; the count does not
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        assert isinstance(app.screen, SearchScreen)
        for key in "flaky":
            await pilot.press(key)
        await press(pilot, "enter")
        state = app.search
        assert state.finished and state.query == "flaky"
        # 'flaky' is in tool's value in call_tool at round 2 and in the reply/memory after it
        assert 18 in state.hits and 19 in state.hits and state.where[18].startswith("value")
        assert all(h >= 17 for h in state.hits)
        progress = str(app.screen.query_one("#search-progress").render())
        assert f"{len(state.hits)} hit" in progress and len(state.hits) > 3
        assert "the first 3 listed here" in progress
        assert len(app.screen.query_one("#search-hits").options) == 3
        await press(pilot, "tab", "q")  # close from the hit list; hits stay, "." walks them
        assert app.screen.query_one("#timeline").hits == frozenset(state.hits)
        await press(pilot, "full_stop")
        assert app.selection.step == state.hits[0]
        await press(pilot, "full_stop")
        assert app.selection.step == state.hits[1]
        await press(pilot, "comma")
        assert app.selection.step == state.hits[0]
        assert "search 'flaky'" in str(app.screen.query_one("#status").render())


async def test_search_by_function_and_label_and_choose_a_hit(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        for key in "round done":
            await pilot.press("space" if key == " " else key)
        await press(pilot, "enter")
        assert app.search.hits == [6, 13, 20, 27]
        assert {app.search.where[h] for h in app.search.hits} == {"label"}
        await press(pilot, "tab", "down", "enter")  # Tab highlights the first hit: the second
        assert app.selection.step == 13


def _forked_file(path):
    with snap.record(path, name="parent") as parent:
        for n in range(6):
            snap.checkpoint(f"p{n}", n=n)
    with snap.record(path, name="fork", parent=(parent.run_id, 3)):
        for n in range(3):
            snap.checkpoint(f"f{n}", n=n)
    with snap.record(path, name="other"):
        snap.checkpoint("o0")
    return path


async def test_runs_tree_and_switching(tmp_path):
    reader = snap.open_timeline(_forked_file(tmp_path / "forks.snap"))
    try:
        app = SnapStateApp(reader, run_id=reader.runs[0].id, step=5)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert app.current_run.name == "parent" and app.selection.step == 5
            await press(pilot, "r")
            screen = app.screen
            assert isinstance(screen, RunsScreen)
            tree = screen.query_one("#runs-tree")
            roots = [node.label.plain for node in tree.root.children]
            assert len(roots) == 2 and "parent" in roots[0] and "other" in roots[1]
            fork = tree.root.children[0].children[0]
            assert "fork" in fork.label.plain and "at step 3" in fork.label.plain
            tree.move_cursor(fork)
            await press(pilot, "enter")
            assert app.current_run.name == "fork"
            assert app.selection.step == 2  # kept where it makes sense: clamped to the fork
            await press(pilot, "left_square_bracket")  # back to the parent at step 5
            assert app.current_run.name == "parent" and app.selection.step == 5
    finally:
        reader.close()


async def test_live_follow_shows_new_steps(tmp_path):
    path = tmp_path / "live.snap"
    started, more, done = threading.Event(), threading.Event(), threading.Event()

    def program():
        with snap.record(path, name="live"):
            for n in range(3):
                snap.checkpoint(f"s{n}", n=n)
            started.set()
            more.wait(10)
            for n in range(3, 6):
                snap.checkpoint(f"s{n}", n=n)
            done.set()
            more.wait(10)

    thread = threading.Thread(target=program)
    thread.start()
    try:
        assert started.wait(10)
        reader = snap.open_timeline(path)
        app = SnapStateApp(reader)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert app.follow  # the run is being recorded: follow is on
            assert app.step_count() == 3
            more.set()
            assert done.wait(10)
            for _ in range(40):
                await pilot.pause(0.1)
                if app.selection.step == 5:
                    break
            assert app.selection.step == 5
            assert app.screen.query_one("#timeline").count == 6
            await press(pilot, "l")
            assert not app.follow
        reader.close()
    finally:
        more.set()
        thread.join(10)


async def test_help_lists_every_binding_and_palette_every_command(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert all(command.title in titles for command in keymap.COMMANDS
                   if command.id != "palette")
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        from rich.console import Console

        from snapstate_inspect.screens.help import help_table

        console = Console(width=120, record=True)
        console.print(help_table())
        text = console.export_text()
        for command in keymap.COMMANDS:
            assert command.title in text and command.key_display in text
        shown = app.export_screenshot().replace("&#160;", " ")
        assert "Next exception" in shown and "Step over" in shown
        assert "Esc or Enter closes this" in shown  # said at the top, not below the table
        await press(pilot, "q")
        assert not isinstance(app.screen, HelpScreen)
        await press(pilot, "question_mark", "escape")
        assert not isinstance(app.screen, HelpScreen)


def test_help_lists_home_and_end_with_first_and_last_step():
    """Home and End move to the first and last step (in the timeline), but the help listed them
    only at its foot, under the panels, below the screen's fold: "First step" showed ``<`` alone."""
    from rich.console import Console

    from snapstate_inspect.screens.help import help_table

    console = Console(width=120, record=True)
    console.print(help_table())
    lines = console.export_text().splitlines()
    first = next(line for line in lines if "First step —" in line)
    last = next(line for line in lines if "Last step —" in line)
    assert first.split()[:2] == ["<,", "Home"] and last.split()[:2] == [">,", "End"]
    assert lines.index(first) < lines.index(next(line for line in lines if "Find" in line))


async def test_palette_command_runs_the_action(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        command = next(c for c in app.get_system_commands(app.screen)
                       if c.title == "Next exception")
        command.callback()
        await settle(pilot)
        assert app.selection.step == 19


async def test_file_text_is_shown_literally(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "g", "6", "enter")
        rows = labels(app.screen.query_one(VariablesView))
        banner = next(r for r in rows if "banner" in r)
        assert "'[bold red]not markup[/] \\x1b[31mred?\\x1b[0m'" in banner
        secret = next(r for r in rows if r[2:].startswith("state"))
        assert "sk-not" not in secret and "<redacted>" in secret
        lock = next(r for r in rows if r[2:].startswith("lock"))
        assert "[placeholder:" in lock


async def test_big_values_page_and_never_block(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        from make_big_timeline import make
    finally:
        sys.path.pop(0)
    path = tmp_path / "big.snap"
    make(path, 16)
    reader = snap.open_timeline(path)
    app = SnapStateApp(reader, step=0)  # main's frame holding the big values
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            tree = app.screen.query_one(VariablesView)
            rows = labels(tree)
            blob = next(r for r in rows if r[2:].startswith("blob"))
            assert "str[10000000]" in blob and len(blob) < 300
            assert any("list[1000000]" in r for r in rows)
            await select_variable(pilot, "hostile")
            await press(pilot, "enter")  # expand: the first page only
            node = tree.cursor_node
            assert len(node.children) == 101
            assert node.children[-1].label.plain.startswith("… show 100 more (199900 left)")
            tree.move_cursor(node.children[-1])
            await press(pilot, "enter")
            assert len(node.children) == 201
            detail = str(app.screen.query_one("#detail").render())
            assert len(detail) < 25_000
    finally:
        reader.close()


async def test_a_forks_replayed_steps_keep_their_times(tmp_path):
    """A fork's steps 0 … N are its parent's, with the parent's wall times: the timeline shows
    them as the parent does (it showed ``+0.000s`` for all of them: they are older than the
    fork's start)."""
    from snapstate_inspect.widgets.timeline import TimelineView

    path = tmp_path / "fork.snap"
    fork_id = _forked_by_replay(path, pause=0.05)

    async def offsets(run_id):
        reader = snap.open_timeline(path)
        app = SnapStateApp(reader, run_id=run_id)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            view = app.screen.query_one(TimelineView)
            lines = ["".join(seg.text for seg in view.render_line(y)) for y in range(4)]
        reader.close()
        return [line.split()[1] for line in lines]

    parent, fork = await offsets(reader_first_run(path)), await offsets(fork_id)
    assert fork == parent
    assert len(set(fork)) == 4 and fork[3] != "+0.000s"


def _forked_by_replay(path, pause=0.0) -> str:
    """A parent run of 5 checkpoints and a fork of it at step 3 made as replay makes one
    (steps 0-3 copied with their times); returns the fork's id."""
    import time

    from snapstate_capture.replay.fork import start_fork
    from snapstate_capture.store.writer import TimelineWriter

    with snap.record(path, name="parent"):
        for n in range(5):
            time.sleep(pause)
            snap.checkpoint(f"p{n}", n=n)
    with snap.open_timeline(path) as timeline:
        writer = TimelineWriter(path)
        fork_id = start_fork(writer, timeline.runs[-1], 3)
        writer.end_run(fork_id, "finished")
        writer.close()
    return fork_id


def reader_first_run(path) -> str:
    with snap.open_timeline(path) as timeline:
        return timeline.runs[0].id


async def test_the_source_panel_follows_a_jump_into_a_long_file(tmp_path):
    """From a step in a short file, ``g`` (or ``x``) onto a step far down a long file: the
    Source panel shows that line (it stayed at the top of the file until ``n`` then ``p``)."""
    import importlib.util

    from snapstate_inspect.widgets.source import SourceView

    def load(name, text):
        (tmp_path / f"{name}.py").write_text(text)
        spec = importlib.util.spec_from_file_location(name, tmp_path / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    head = "import snapstate_capture as snap\n"
    short = load("short_module", head + "def short():\n    snap.checkpoint('short')\n")
    long = load("long_module", head + "".join(f"VALUE_{n} = {n}\n" for n in range(400))
                + "\n\ndef deep_in_the_file():\n    snap.checkpoint('far down')\n"
                + "".join(f"MORE_{n} = {n}\n" for n in range(100)))
    path = tmp_path / "jump.snap"
    with snap.record(path):
        short.short()  # a file shorter than the panel: no scrollbar
        long.deep_in_the_file()
    reader = snap.open_timeline(path)
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        source = app.screen.query_one(SourceView)
        assert source.line_count == 3
        await press(pilot, "g", "1", "enter")
        assert source.lineno > 400 and source.line_count > 400
        top = int(source.scroll_offset.y)
        assert top < source.lineno <= top + source.scrollable_content_region.height
    reader.close()


async def test_a_terminal_of_80_columns_leaves_every_pane_readable(reader):
    """Under 120 columns the timeline gives up width (``narrow``): at 80×24 the stack was 4
    columns wide and the value pane 8."""
    app = SnapStateApp(reader)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.screen.has_class("narrow")
        widths = {name: app.screen.query_one(f"#{name}").size.width
                  for name in ("timeline", "stack", "source", "variables", "detail")}
        assert widths["timeline"] <= 32 and min(widths.values()) >= 15, widths
        row = "".join(seg.text for seg in app.screen.query_one("#timeline").render_line(0))
        assert "+0." not in row  # no time offset at this width: the label gets the room
        await pilot.resize_terminal(160, 40)
        await settle(pilot)
        assert not app.screen.has_class("narrow")
        assert app.screen.query_one("#timeline").size.width >= 50


async def test_a_forks_own_steps_are_marked_where_they_begin(tmp_path):
    """A fork made by replay copies its parent's steps 0..N with their times; the offset of
    its first own step is marked ``⑂`` (the offsets jump there), at any width."""
    from tests.conftest import run_cli
    from snapstate_inspect.widgets.timeline import TimelineView

    (tmp_path / "steps.py").write_text(
        "import time\nimport snapstate_capture as snap\n"
        "for n in range(4):\n    snap.checkpoint(f'c{n}', n=n)\n    time.sleep(0.05)\n")
    path = tmp_path / "steps.snap"
    assert run_cli("record", "--trace", "calls", "-o", str(path), "steps.py",
                   cwd=tmp_path).returncode == 0
    forked = run_cli("replay", str(path), "--to", "1", "--live", cwd=tmp_path)
    assert forked.returncode == 0, forked.stdout + forked.stderr
    reader = snap.open_timeline(path)
    try:
        fork = reader.runs[-1]
        assert fork.parent is not None and fork.parent.step == 1
        for size in ((80, 24), SIZE):
            app = SnapStateApp(reader, run_id=fork.id)
            async with app.run_test(size=size) as pilot:
                await settle(pilot)
                view = app.screen.query_one(TimelineView)
                rows = ["".join(seg.text for seg in view.render_line(y)) for y in range(4)]
            assert [("⑂" in row) for row in rows] == [False, False, True, False], rows
        parent = reader.runs[0]
        app = SnapStateApp(reader, run_id=parent.id)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            view = app.screen.query_one(TimelineView)
            assert not any("⑂" in "".join(seg.text for seg in view.render_line(y))
                           for y in range(4))
    finally:
        reader.close()


async def test_a_run_without_changes_draws_no_bars(tmp_path):
    """A run with no steps (or none that changed a local) has nothing to plot: no row of full
    blocks, which a plot of equal totals draws."""
    from snapstate_inspect.widgets.sparkline import RunPlot

    path = tmp_path / "empty.snap"
    with snap.record(path, name="empty"):
        pass
    reader = snap.open_timeline(path)
    try:
        app = SnapStateApp(reader)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            for _ in range(20):
                await pilot.pause(0.05)
            plot = app.screen.query_one(RunPlot)
            assert list(plot.data or []) == []
            assert "█" not in app.export_screenshot()
    finally:
        reader.close()


async def test_a_dialogs_text_wraps_instead_of_being_cut(reader):
    """At 100 columns the search dialog's hint is longer than a line: it wraps (it was cut at
    '@text: functions, file')."""
    app = SnapStateApp(reader)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        assert isinstance(app.screen, SearchScreen)
        shown = app.export_screenshot().replace("&#160;", " ")
        assert "Esc: close (it goes" in shown and "on)" in shown


async def test_tab_into_the_hits_highlights_the_first_and_enter_opens_it(reader):
    """README: "Tab to the hits and Enter on the first". With nothing highlighted on Tab,
    Enter did nothing and Down went to the first hit, not the second."""
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash", *"flaky", "enter")
        hits = app.screen.query_one("#search-hits")
        assert hits.option_count >= 2
        first, second = (int(hits.get_option_at_index(i).id) for i in (0, 1))
        await press(pilot, "tab")
        assert hits.highlighted == 0
        await press(pilot, "down", "enter")
        assert app.selection.step == second
        await press(pilot, "slash", "tab", "enter")
        assert app.selection.step == first


async def test_tab_before_the_hits_arrive_highlights_the_first_when_they_do(reader, monkeypatch):
    """A slow search: Tab lands in the hit list before any hit is listed; the first hit that
    arrives is highlighted then, as after a later Tab (the reviewer's finding)."""
    import time

    from snapstate_inspect import app as app_module

    searching = app_module.iter_search

    def slowly(*args, **kwargs):
        for item in searching(*args, **kwargs):
            time.sleep(0.05)
            yield item

    monkeypatch.setattr(app_module, "iter_search", slowly)
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"flaky", "enter", "tab")
        hits = app.screen.query_one("#search-hits")
        await settle(pilot)
        assert hits.option_count >= 2 and hits.highlighted == 0
        second = int(hits.get_option_at_index(1).id)
        await press(pilot, "down", "enter")
        assert app.selection.step == second


async def test_a_value_hit_opens_with_its_variable_selected(reader):
    """Enter on a hit ``value NAME[path]`` went to the step with the innermost frame's first
    variable selected (``goal``); the variable the hit is in is selected now."""
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash", *"flaky", "enter")
        state = app.search
        step = next(h for h in state.hits if state.where[h].startswith("value "))
        name = state.where[step][len("value "):].split("[")[0].split(".")[0]
        hits = app.screen.query_one("#search-hits")
        index = next(i for i in range(hits.option_count)
                     if int(hits.get_option_at_index(i).id) == step)
        await press(pilot, "tab", *["down"] * index, "enter")
        await settle(pilot)
        assert app.selection.step == step
        assert app.variable is not None and app.variable.name == name
        frames = app.current_step().frames
        position = app.selection.frame
        assert position is not None and name in frames[position].locals
        assert app.screen.query_one(VariablesView).cursor_node.data.key.name == name


async def test_a_value_hit_in_an_outer_frame_selects_that_frame(tmp_path):
    """A recursive function's outer frame held the match (``word = 'needle-...'``) and its
    inner frame a local of the same name that did not: the hit went to the inner frame's
    ``word``, because the inspector chose the innermost frame with a local of that name. The
    hit carries the frame the search matched in."""
    path = tmp_path / "nested.snap"
    with snap.record(path, name="nested"):
        def descend(word: str, depth: int) -> None:
            if depth == 0:
                snap.checkpoint("bottom")
                return
            descend("plain", depth - 1)

        descend("needle-in-the-outer-frame", 2)
    with snap.open_timeline(path) as reader:
        app = SnapStateApp(reader)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "slash", *"needle-in", "enter")
            step = app.search.hits[0]
            assert app.search.where[step] == "value word"
            await press(pilot, "tab", "enter")
            await settle(pilot)
            frames = app.current_step().frames
            position = app.selection.frame
            assert frames[position].locals["word"].preview["repr"] == \
                "'needle-in-the-outer-frame'"
            assert app.variable is not None and app.variable.position == position


async def test_a_search_hit_in_a_step_value_selects_that_value(tmp_path):
    """A service answering 503 is in the exception its effect step holds: choosing the hit
    goes to that step with the cursor on the step value (under "step values"), and the value
    panel shows it."""
    path = record_failing_fetches(tmp_path / "down.snap")
    with snap.open_timeline(path) as timeline:
        app = SnapStateApp(timeline)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "slash", *"503", "enter")
            assert app.search.hits == [0, 2]
            assert app.search.where[2] == "step value exception"
            await press(pilot, "tab", "down", "enter")
            await settle(pilot)
            assert app.selection.step == 2
            node = app.screen.query_one(VariablesView).cursor_node
            assert node is not None and "ServiceDown" in node.data.preview["type"]
            assert "503" in str(app.screen.query_one("#detail").render())


async def test_a_frame_that_submitted_a_pool_call_says_why_it_has_no_locals():
    """A LangGraph tool runs in the framework's thread pool: its effect step is sited at the
    code that started the graph, kept without that frame's locals (another thread's). The
    panel said "(no locals)" — and, against the step before, listed every local as removed."""
    from pathlib import Path

    from snapstate_inspect.model.values import SUBMITTED_FRAME

    sample = Path(__file__).resolve().parents[2] / "sample_snapshots" / "langgraph_agent.snap"
    with snap.open_timeline(sample) as timeline:
        steps = timeline.runs[-1].steps
        index = next(s.index for s in steps if s.kind == "effect" and s.frames[-1].submitted)
        app = SnapStateApp(timeline)
        async with app.run_test(size=SIZE) as pilot:
            await press(pilot, "g", *str(index), "enter")
            rows = labels(app.screen.query_one(VariablesView))
            assert rows[0] == SUBMITTED_FRAME, rows
            assert not any(row.startswith("-") for row in rows), rows
