"""Every inspector action in one table: its keys, palette title, help text and group.

The table feeds the main screen's bindings, the footer, the help screen and the command palette,
so an action cannot exist in one and be missing from another. Keys are plain characters, arrows
and page keys, which arrive the same in tmux, VS Code's terminal and xterm: no action needs
Esc, Alt or ctrl+space (issue 4, point 5).

Adding an action (e.g. issue 8's "mark step" or issue 9's "fork here"): ``register(Command(...,
run=handler))`` at import time of your module, where ``handler(app)`` receives the
``SnapStateApp``; then import your module from ``snapstate_inspect.screens`` (its ``__init__``
imports every extension). Built-in commands have no ``run``: the main screen's
``action_<id>`` method handles them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    """One action: ``id`` (also the ``action_<id>`` name), ``keys`` (Textual key names, comma
    separated; the first is the one displayed), ``title`` (palette), ``help``, ``group`` (help
    screen section), ``footer`` (shown in the footer), ``short`` (its footer label on a
    terminal under ``widgets.footer.SHORT_BELOW`` columns), ``run`` (handler taking the app),
    ``timeline_keys`` (keys the timeline panel binds to the same move while it has focus —
    other panels use them for themselves — listed after ``keys``, never bound here)."""

    id: str
    keys: str
    title: str
    help: str
    group: str
    footer: bool = False
    run: Callable[[Any], object] | None = None
    short: str = ""
    timeline_keys: str = ""

    @property
    def key_display(self) -> str:
        """The keys as a person types them (``n, j``; ``<, Home``)."""
        keys = [k.strip() for k in f"{self.keys},{self.timeline_keys}".split(",") if k.strip()]
        return ", ".join(KEY_NAMES.get(k, k) for k in keys)


KEY_NAMES = {"less_than_sign": "<", "greater_than_sign": ">", "slash": "/",
             "question_mark": "?", "left_square_bracket": "[", "right_square_bracket": "]",
             "colon": ":", "comma": ",", "full_stop": ".", "pageup": "PgUp",
             "pagedown": "PgDn", "home": "Home", "end": "End", "up": "↑", "down": "↓",
             "enter": "Enter", "tab": "Tab", "shift+tab": "Shift+Tab", "ctrl+p": "Ctrl+P",
             "space": "Space", "f1": "F1", "equals_sign": "="}

NAVIGATE, FIND, VIEW, APP = "Move through steps", "Find", "Views", "App"

#: ``footer=True`` is for the few keys a newcomer needs first (step, go to, exception, search,
#: fork, help, quit): with the palette's key they fit 120 columns (``tests/inspect/
#: test_footer.py``); every other key is on the help screen and in the palette.

COMMANDS: list[Command] = [
    Command("next_step", "n,j", "Next step", "Go to the next step.", NAVIGATE, footer=True,
            short="Next"),
    Command("prev_step", "p,k", "Previous step", "Go to the previous step.", NAVIGATE,
            footer=True, short="Prev"),
    Command("first_step", "less_than_sign", "First step",
            "Go to step 0 (Home: in the timeline panel).", NAVIGATE, timeline_keys="home"),
    Command("last_step", "greater_than_sign", "Last step",
            "Go to the last step (End: in the timeline panel).", NAVIGATE, timeline_keys="end"),
    Command("goto_step", "g", "Go to step…", "Type a step number and go there.", NAVIGATE,
            footer=True, short="Go to"),
    Command("step_over", "o", "Step over",
            "Next step at this depth or shallower (skips the steps inside calls).", NAVIGATE),
    Command("step_back_over", "O", "Step back over",
            "Previous step at this depth or shallower.", NAVIGATE),
    Command("next_call", "c", "Next call of this function",
            "Next call of the function running at this step.", NAVIGATE),
    Command("prev_call", "C", "Previous call of this function",
            "Previous call of the function running at this step.", NAVIGATE),
    Command("next_change", "v", "Next change of the variable",
            "Next step where the selected variable changed.", NAVIGATE),
    Command("prev_change", "V", "Previous change of the variable",
            "Previous step where the selected variable changed.", NAVIGATE),
    Command("next_exception", "x", "Next exception",
            "Next exception step, or effect whose call raised (caught or not).", NAVIGATE,
            footer=True, short="Exception"),
    Command("prev_exception", "X", "Previous exception",
            "Previous exception step, or effect whose call raised.", NAVIGATE),
    Command("back", "left_square_bracket", "Back", "Back to where you were before the last jump.",
            NAVIGATE),
    Command("forward", "right_square_bracket", "Forward", "Undo a Back.", NAVIGATE),
    Command("search", "slash", "Search…",
            "Search functions, files, labels and values across the run.", FIND, footer=True,
            short="Search"),
    Command("stop_search", "s", "Stop the search", "Stop a search still running.", FIND),
    Command("next_hit", "full_stop", "Next search hit", "Go to the next hit of the last search.",
            FIND),
    Command("prev_hit", "comma", "Previous search hit",
            "Go to the previous hit of the last search.", FIND),
    Command("variable_history", "h", "History of the variable",
            "Every step where the selected variable changed, old → new.", FIND),
    Command("runs", "r", "Runs…", "The runs in this file as a tree (forks under parents).",
            VIEW),
    Command("toggle_follow", "l", "Follow live recording",
            "Toggle following a file that is still being recorded.", VIEW),
    Command("help", "question_mark,f1", "Help", "Show every key binding.", APP, footer=True),
    Command("palette", "colon", "Command palette", "Every action by name (also Ctrl+P).", APP),
    Command("quit", "q", "Quit", "Leave the inspector.", APP, footer=True),
]


def register(command: Command) -> None:
    """Add ``command`` (replacing one with the same id) — for extensions, at import time."""
    for position, existing in enumerate(COMMANDS):
        if existing.id == command.id:
            COMMANDS[position] = command
            return
    COMMANDS.append(command)


def find(command_id: str) -> Command | None:
    """The command with ``command_id``, or None."""
    return next((c for c in COMMANDS if c.id == command_id), None)


#: Keys handled by panels themselves (listed on the help screen too).
PANEL_KEYS: list[tuple[str, str, str]] = [
    ("Timeline", "↑ ↓ PgUp PgDn Home End", "Move the selected step; click a row to select it."),
    ("Stack", "↑ ↓ Enter", "Select a frame: source and variables follow."),
    ("Variables", "↑ ↓ Enter Space", "Select a variable; Enter/Space expands a container."),
    ("Everywhere", "Tab, Shift+Tab", "Move between panels."),
]
