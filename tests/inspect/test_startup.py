"""What the inspector's start-up loads: the reader and the first screen, not the recorder, the
replay machinery or the other commands (they are imported when used), and no pygments guess."""

from __future__ import annotations

import json

from snapstate_inspect.widgets.source import lexer_name
from tests.conftest import run_python

LOADED = """
import json, sys
import snapstate_capture as snap
from snapstate_inspect.app import SnapStateApp
print(json.dumps(sorted(sys.modules)))
"""

#: Modules a reader and the first screen never need (each is imported where it is used).
NOT_AT_START = (
    "snapstate_capture.capture.api", "snapstate_capture.capture.effects", "snapstate_capture.capture.frames",
    "snapstate_capture.capture.recorder", "snapstate_capture.replay", "snapstate_capture.trust.gate",
    "snapstate_inspect.commands", "deepdiff", "pygments.lexers.python",
)


def test_importing_the_app_loads_no_recorder_replay_or_commands():
    result = run_python("-c", LOADED)
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout))
    assert "snapstate_capture.store.reader" in loaded and "textual.app" in loaded
    early = sorted(name for name in loaded
                   if any(name == lazy or name.startswith(lazy + ".") for lazy in NOT_AT_START))
    assert early == []


def test_python_sources_need_no_lexer_guess():
    assert lexer_name("/srv/agent/loop.py", "x = 1") == "python"
    assert lexer_name("types.pyi", "") == "python" and lexer_name("", "x") == "python"
    assert lexer_name("page.html", "<p>hi</p>") == "html"  # anything else: pygments decides


CLI_LOADED = """
import json, sys
from snapstate_inspect import cli
code = cli.main([sys.argv[1]])  # `snapstate FILE` on a missing file: the one-line error
print(json.dumps([code, sorted(sys.modules)]))
"""


def test_snapstate_file_loads_the_inspect_command_alone(tmp_path):
    result = run_python("-c", CLI_LOADED, str(tmp_path / "missing.snap"))
    assert result.returncode == 0, result.stderr
    code, loaded = json.loads(result.stdout)
    assert code == 2 and "no such file" in result.stderr
    commands = sorted(m for m in loaded if m.startswith("snapstate_inspect.commands."))
    assert commands == ["snapstate_inspect.commands.common", "snapstate_inspect.commands.inspect"]
    assert not {"snapstate_capture.capture.recorder", "snapstate_capture.replay"} & set(loaded)


async def test_footer_is_rebuilt_only_when_its_keys_change(reader):
    from textual.widgets._footer import FooterKey

    from snapstate_inspect.app import SnapStateApp
    from snapstate_inspect.widgets.footer import KeysFooter

    from .conftest import settle

    app = SnapStateApp(reader)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeysFooter)
        keys = list(footer.query(FooterKey))
        assert {key.description for key in keys} >= {"Next step", "Quit"}
        app.screen.refresh_bindings()  # the same keys: nothing rebuilt
        await settle(pilot)
        assert list(footer.query(FooterKey)) == keys
        app.screen._bindings.bind("z", "app.bell", "Zap", show=True)
        app.screen.refresh_bindings()  # a new key: rebuilt with it
        await settle(pilot)
        shown = list(footer.query(FooterKey))
        assert "Zap" in {key.description for key in shown} and shown[0] is not keys[0]


async def test_plot_and_idle_collections_wait_for_the_first_complete_screen(reader):
    import threading

    from snapstate_inspect.app import SnapStateApp

    from .conftest import settle

    app = SnapStateApp(reader)
    release = threading.Event()
    load = app.loader.load
    app.loader.quick = lambda values, budget=0: False  # the worker path, as for a huge preview
    app.loader.load = lambda value: (release.wait(30), load(value))[1]
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert screen._awaiting_variables and screen._plot_for is not None  # plot not started
        assert app._idle_timer is None  # no full collection while the first screen loads
        release.set()
        await settle(pilot)
        assert screen._loaded_for is not None and screen._plot_for is None
        assert app._idle_timer is not None
