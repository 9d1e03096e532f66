"""Screens of the inspector, and the registry the app installs (``App.SCREENS``).

``SCREENS`` maps a name to a screen class that takes no arguments; push one with
``app.push_screen(name)``. Screens that need arguments (a dialog with a callback) are
constructed directly. An extension (issue 8's diff screen, issue 9's fork/replay) adds its
module here: define the screen, add it to ``SCREENS`` and register its commands with
``keymap.register`` at import time; the import below makes them known to the app.
"""

from __future__ import annotations

from textual.screen import Screen

from . import diff_commands  # noqa: F401 - registers the diff actions (issue 8)
from . import replay  # noqa: F401 - registers "fork here" and "replay check" (issue 9)
from . import answer  # noqa: F401 - registers "answer this wait" (issue 17)
from .help import HelpScreen

SCREENS: dict[str, type[Screen]] = {
    "help": HelpScreen,
}
