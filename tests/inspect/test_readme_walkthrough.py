"""The README's walkthroughs, key by key, on the committed samples (what a new user types)."""

from __future__ import annotations

import snapstate_capture as snap
from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.screens.history import VariableHistoryScreen
from snapstate_inspect.widgets.variables import VariablesView

from tests.conftest import ROOT

from .conftest import settle
from .test_navigation import SIZE, press

SAMPLES = ROOT / "sample_snapshots"


async def test_walkthrough_2_finds_the_planted_bug_with_the_keys_it_names():
    """README "2. Find the planted bug": ``>``, Tab ↑, Tab Tab ↓ Enter ↓ Enter ↓, ``h``, then
    "↓ to step 32 and Enter" — one ↓, because the history opens on its first change."""
    with snap.open_timeline(SAMPLES / "buggy_agent.snap") as reader:
        app = SnapStateApp(reader)
        async with app.run_test(size=(160, 45)) as pilot:
            await settle(pilot)
            await press(pilot, "greater_than_sign", "tab", "up")
            assert app.current_step().frames[app.selection.frame].function == "run_agent"
            await press(pilot, "tab", "tab")
            tree = app.screen.query_one(VariablesView)
            assert tree.has_focus

            async def down_to(display: str) -> None:
                for _ in range(40):
                    node = tree.cursor_node
                    if node is not None and node.data.key.display == display:
                        return
                    await press(pilot, "down")
                raise AssertionError(f"no {display} in the Variables panel")

            await down_to("sources")
            await press(pilot, "enter")
            await down_to("sources['case_study_harbour_city']")
            await press(pilot, "enter", "down")
            assert app.variable.display == "sources['case_study_harbour_city'].doc_id"
            await press(pilot, "h")
            screen = app.screen
            assert isinstance(screen, VariableHistoryScreen)
            await settle(pilot)
            assert [change.step for change in screen.changes] == [23, 32]
            await press(pilot, "down", "enter")
            assert app.selection.step == 32


async def test_walkthrough_7_traces_mistune(tmp_path):
    """README "7. Trace a package you did not write", on mistune traced line by line (made
    here in-process, as ``snapstate record --trace lines --include '*/mistune/*'`` does)."""
    import mistune

    from snapstate_inspect.screens.search import SearchScreen

    path = tmp_path / "md.snap"
    markdown = mistune.create_markdown()
    text = (ROOT / "examples" / "release_notes.md").read_text()
    with snap.record(path, trace="lines", include=[f"{mistune.__path__[0]}/*.py"]):
        markdown(text)
    with snap.open_timeline(path) as reader:
        app = SnapStateApp(reader)
        async with app.run_test(size=(160, 45)) as pilot:
            await settle(pilot)

            async def search(query: str) -> None:
                await press(pilot, "slash")
                assert isinstance(app.screen, SearchScreen)
                for key in query:
                    await pilot.press({"_": "underscore", "@": "at"}.get(key, key))
                await press(pilot, "enter")
                await settle(pilot)
                assert app.search.query == query and app.search.finished

            await search("list_item")
            wheres = set(app.search.where.values())
            assert "value tokens[0]['type']" in wheres
            assert "value token['children'][0]['type']" in wheres
            await press(pilot, "escape")
            await search("@HTMLRenderer.render_token")  # its own steps, not values holding it
            await press(pilot, "tab")  # the hit list, its first hit highlighted
            hits = app.screen.query_one("#search-hits")
            assert all("(function)" in hits.get_option_at_index(i).prompt.plain
                       for i in range(hits.option_count))
            chosen = hits.get_option_at_index(hits.highlighted)
            assert "(function)" in chosen.prompt.plain
            await press(pilot, "enter")
            assert app.selection.step == int(chosen.id), (chosen.prompt.plain, app.screen)
            assert app.current_step().function == "HTMLRenderer.render_token", chosen.prompt.plain
            # the hit list shows this search's hits only (a new query listed the last one's)
            assert all("render_token" in hits.get_option_at_index(i).prompt.plain
                       or "value" in hits.get_option_at_index(i).prompt.plain
                       for i in range(hits.option_count))
            assert app.current_step().kind == "call"
            await press(pilot, "tab", "tab", "tab")
            tree = app.screen.query_one(VariablesView)
            assert tree.has_focus
            for _ in range(10):
                if tree.cursor_node is not None and tree.cursor_node.data.key.name == "token":
                    break
                await press(pilot, "down")
            await press(pilot, "h")
            screen = app.screen
            assert isinstance(screen, VariableHistoryScreen)
            await settle(pilot)
            kinds = [str(snap.Value(reader, "token", change.new).preview["children"][0][1]
                         ["repr"]) for change in screen.changes]
            assert kinds == ["'heading'", "'blank_line'", "'paragraph'", "'blank_line'",
                             "'list'"]
            assert not any(snap.Value(reader, "token", c.new).is_redacted
                           for c in screen.changes)
