"""The main screen's footer: the most-used keys, all of them visible at 160 and 120 columns."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from snapstate_inspect import keymap
from snapstate_inspect.app import SnapStateApp
from snapstate_inspect.widgets.footer import KeysFooter

from .conftest import settle


@pytest.mark.parametrize("size", [(160, 40), (120, 40), (100, 40), (80, 24)])
async def test_the_footer_fits_the_terminal(reader, size):
    """Thirteen keys and the palette's needed 211 columns: at 160 the footer was cut in the
    middle of "Diff against the mark" and the rest could not be seen. It shows the most-used
    keys now; the others are on the help screen and in the palette."""
    app = SnapStateApp(reader)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeysFooter)
        keys = list(footer.query(FooterKey))
        assert footer.max_scroll_x == 0  # nothing scrolled out of sight
        assert all(key.region.right <= size[0] for key in keys)
        palette = [key for key in keys if key.key == "ctrl+p"]
        others = [key for key in keys if key.key != "ctrl+p"]
        if size[0] >= 120:  # narrower: no palette key (``?`` lists every key)
            assert palette and all(key.region.right <= palette[0].region.x for key in others)
        shown = {key.description for key in others}
        footer_commands = [command for command in keymap.COMMANDS if command.footer]
        if size[0] >= 100:
            assert {"Next step", "Previous step", "Next exception", "Search…", "Help",
                    "Quit"} <= shown
            assert shown == {command.title for command in footer_commands}
        else:  # a terminal's default width: every key with its short label ("Next", "Quit")
            assert {"Next", "Prev", "Exception", "Search", "Help", "Quit", "Fork"} <= shown
            assert shown == {command.short or command.title for command in footer_commands}


async def test_the_footer_turns_compact_when_the_terminal_narrows(reader):
    """A resize from 160 to 100 columns: the keys are the same, so the footer skipped its
    rebuild and kept its wide layout, cut at the right edge."""
    app = SnapStateApp(reader)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.resize_terminal(100, 40)
        await settle(pilot)
        footer = app.screen.query_one(KeysFooter)
        assert footer.compact and footer.max_scroll_x == 0
        assert all(key.region.right <= 100 for key in footer.query(FooterKey))
