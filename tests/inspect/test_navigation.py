"""Pilot tests: every navigation key moves the selection where it should and panels follow."""

from __future__ import annotations

from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.widgets.source import SourceView
from snapstate_inspect.widgets.stack import StackView
from snapstate_inspect.widgets.timeline import TimelineView
from snapstate_inspect.widgets.variables import VariablesView

from .conftest import settle

SIZE = (120, 36)  # smaller than the snapshots' 160x45: faster to draw
# The agent's timeline (see tests/inspect/agent.py): calls of plan at 0, 7, 14, 21; exceptions
# at 19 (ToolError inside call_tool) and 28 (the ValueError that ends the run).


def step_of(app) -> int:
    return app.selection.step


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def labels(tree: VariablesView) -> list[str]:
    out = []

    def walk(node):
        for child in node.children:
            out.append(child.label.plain)
            walk(child)
    walk(tree.root)
    return out


async def test_next_previous_first_last(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert step_of(app) == 0
        await press(pilot, "n", "n", "j")
        assert step_of(app) == 3
        await press(pilot, "p", "k")
        assert step_of(app) == 1
        await press(pilot, "down", "down")  # the timeline has focus
        assert step_of(app) == 3
        await press(pilot, "greater_than_sign")
        assert step_of(app) == 28
        await press(pilot, "n")
        assert step_of(app) == 28  # nowhere to go: stays, says so
        await press(pilot, "less_than_sign")
        assert step_of(app) == 0
        await press(pilot, "end")
        assert step_of(app) == 28
        await press(pilot, "home")
        assert step_of(app) == 0
        await press(pilot, "pagedown")
        assert step_of(app) > 10


async def test_goto_step(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "g", "1", "9", "enter")
        assert step_of(app) == 19
        await press(pilot, "g", "-", "1", "enter")
        assert step_of(app) == 28
        await press(pilot, "g", "9", "9", "enter")  # out of range: the dialog stays and says so
        assert "not a step" in str(app.screen.query_one("#goto-error").render())
        await press(pilot, "1", "2", "enter")  # typed afresh, not appended to "99"
        assert step_of(app) == 12
        await press(pilot, "g", "9", "9", "enter", "enter")  # rejected, then empty: cancel
        assert step_of(app) == 12


async def test_step_over_calls_and_exceptions(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "o")  # from the call of plan (depth 2) over plan's own checkpoint
        assert step_of(app) == 2
        await press(pilot, "O")
        assert step_of(app) == 0
        await press(pilot, "c")  # next call of plan
        assert step_of(app) == 7
        await press(pilot, "c")
        assert step_of(app) == 14
        await press(pilot, "C")
        assert step_of(app) == 7
        await press(pilot, "x")
        assert step_of(app) == 19
        await press(pilot, "x")
        assert step_of(app) == 28
        await press(pilot, "X")
        assert step_of(app) == 19


async def test_back_and_forward(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n", "x")  # 1, then jump to 19
        await press(pilot, "x")  # jump to 28
        await press(pilot, "left_square_bracket")
        assert step_of(app) == 19
        await press(pilot, "left_square_bracket")
        assert step_of(app) == 1
        await press(pilot, "right_square_bracket")
        assert step_of(app) == 19
        await press(pilot, "right_square_bracket")
        assert step_of(app) == 28


async def test_stack_rows_fit_a_narrow_panel_and_keep_the_line_number(reader):
    """At 80 columns a frame that does not fit its row gets two lines, function then place,
    each cut to the panel with ``…`` (the place from its start: the line number stays); at
    160 columns it is one line, as it always was."""
    app = SnapStateApp(reader)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "g", "1", "9", "enter")  # the ToolError inside call_tool
        stack = app.screen.query_one(StackView)
        width = stack.scrollable_content_region.width
        prompts = [stack.get_option_at_index(i).prompt.plain for i in range(stack.option_count)]
        assert len(prompts) == 3 and width < 25
        for prompt in prompts:
            function, place = prompt.split("\n")
            assert len(function) <= width and len(place) <= width, prompts
        assert prompts[2].startswith("#2 call_tool") and prompts[2].endswith(":25")
        await pilot.resize_terminal(160, 40)
        await settle(pilot)
        assert stack.get_option_at_index(2).prompt.plain.endswith("#2 call_tool  agent.py:25")


async def test_panels_follow_the_selection(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "g", "1", "9", "enter")  # the ToolError inside call_tool
        stack = app.screen.query_one(StackView)
        assert stack.option_count == 3
        assert "call_tool" in stack.get_option_at_index(2).prompt.plain
        assert stack.highlighted == 2
        source = app.screen.query_one(SourceView)
        assert source.lineno == 25 and source.line_count > 40
        assert app.screen.query_one(TimelineView).cursor == 19
        rows = labels(app.screen.query_one(VariablesView))
        assert any(r.lstrip().startswith("tool str") and "'flaky'" in r for r in rows)
        assert any("exception" in r and "ToolError" in r for r in rows)
        status = str(app.screen.query_one("#status").render())
        assert "step 19 of 29" in status and "failed" in status
        # choose the outer frame: source and variables follow it
        stack.focus()
        await press(pilot, "up")
        assert app.selection.frame == 1
        assert source.lineno == 46
        rows = labels(app.screen.query_one(VariablesView))
        assert any(r.lstrip().startswith("memory list") for r in rows)
        # stepping keeps the chosen frame while the same function runs there
        await press(pilot, "n")
        assert app.selection.frame == 1 and step_of(app) == 20


async def test_change_marks(reader):
    app = SnapStateApp(reader)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "g", "1", "3", "enter")  # round 1 done, vs step 12 (same frame)
        rows = labels(app.screen.query_one(VariablesView))
        memory = next(r for r in rows if r[2:].startswith("memory "))
        assert memory.startswith("~")  # memory grew since step 12
        rounds = next(r for r in rows if r[2:].startswith("rounds "))
        assert rounds.startswith(" ")  # unchanged
        await press(pilot, "g", "0", "enter")  # first step of the frame: no earlier one
        rows = labels(app.screen.query_one(VariablesView))
        assert all(not r.startswith(("~", "-")) for r in rows)


async def test_x_stops_at_an_effect_whose_call_raised_even_when_caught(tmp_path):
    """An effect that raised, caught by the program, leaves no ``exception`` step: ``x`` said
    "no later exception" and skipped it. It is where the failure came in."""
    import snapstate_capture as snap
    from snapstate_inspect.model.navigation import Navigator

    @snap.effect
    def fetch(url):
        raise ConnectionError("down: " + url)

    def agent():
        snap.checkpoint("start")
        try:
            fetch("http://a")
        except ConnectionError:
            pass
        snap.checkpoint("retried")
        raise ValueError("gave up")

    path = tmp_path / "e.snap"
    try:
        with snap.record(path):
            agent()
    except ValueError:
        pass
    timeline = snap.open_timeline(path)
    run = timeline.runs[-1]
    kinds = [step.kind for step in run.steps]
    raised = kinds.index("effect")
    ended = kinds.index("exception")
    assert run.raised_effect_steps() == [raised] and raised < ended
    navigator = Navigator(run)
    assert navigator.exception(0) == raised
    assert navigator.exception(raised) == ended
    assert navigator.exception(ended, backward=True) == raised
    app = SnapStateApp(timeline)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "home", "x")
        assert step_of(app) == raised
