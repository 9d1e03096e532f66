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
