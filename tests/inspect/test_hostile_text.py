"""Text from a file reaches the terminal literally: no Rich markup, no ANSI/OSC sequences."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

import snapstate_capture as snap
from snapstate_inspect.safe_text import escape_controls, plain
from tests.conftest import run_cli

NASTY = {
    "osc_clipboard": "\x1b]52;c;ZXZpbA==\x07",         # OSC 52: write the user's clipboard
    "osc_title": "\x1b]0;owned\x1b\\",                  # OSC 0: set the window title
    "csi_color": "\x1b[31mred\x1b[0m",
    "csi_clear": "\x1b[2J\x1b[H",
    "c1_csi": "\x9b31m",                                # 8-bit CSI
    "bidi": "abc\u202edcba",                            # right-to-left override
    "markup": "[bold red]not bold[/bold red] [link=http://x]link[/link]",
    "emoji": ":warning:",
    "bell_backspace": "a\x07b\x08c\rd",
}


@pytest.fixture(scope="module")
def nasty_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("nasty") / "nasty.snap"
    with snap.record(path, name="\x1b]0;run-name\x07[bold]name[/bold]"):
        values = dict(NASTY)
        snap.checkpoint("\x1b[2Jlabel [red]x[/red]", **NASTY)
    assert values
    return path


def _assert_no_controls(text):
    assert "\x1b" not in text and "\x9b" not in text and "\x07" not in text
    assert "\u202e" not in text and "\x08" not in text


@pytest.mark.parametrize("command", [["show"], ["ls"], ["verify"]])
def test_commands_print_file_text_literally(nasty_file, command):
    result = run_cli(*command, str(nasty_file), env={"TERM": "xterm-256color"})
    assert result.returncode == 0, result.stderr
    _assert_no_controls(result.stdout)
    if command == ["show"]:
        assert "[bold red]not bold[/bold red]" in result.stdout
        assert ":warning:" in result.stdout
        assert "\\x1b]52;c;ZXZpbA==" in result.stdout
        assert "\\u202e" in result.stdout


def test_show_json_escapes_are_json_escapes(nasty_file):
    result = run_cli("show", "--json", str(nasty_file))
    _assert_no_controls(result.stdout)
    data = json.loads(result.stdout)
    assert data["step"]["extra"]["osc_clipboard"]["repr"] == repr(NASTY["osc_clipboard"])


@pytest.mark.parametrize("name", sorted(NASTY))
def test_plain_renders_literally_through_a_real_terminal_console(name):
    console = Console(force_terminal=True, color_system="truecolor", width=200,
                      markup=True, emoji=True)
    with console.capture() as captured:
        console.print(plain(NASTY[name]))
    out = captured.get()
    # The only escapes are Rich's own styling (none here: plain text has no style).
    _assert_no_controls(out.replace("\x1b[0m", ""))
    assert escape_controls(NASTY[name], keep_newlines=False) in out


def test_plain_bounds_enormous_text():
    text = plain("x" * 5_000_000)
    assert len(text.plain) < 20_000 and text.plain.endswith("…")
