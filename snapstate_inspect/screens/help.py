"""The help screen: every binding of the inspector, grouped, generated from ``keymap`` — or,
from a screen of its own (comparison, step diff), that screen's bindings (``bindings_table``)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from .. import keymap


def help_table() -> Table:
    """A table of every command and panel key, by group."""
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    groups: dict[str, list[keymap.Command]] = {}
    for command in keymap.COMMANDS:
        groups.setdefault(command.group, []).append(command)
    for group, commands in groups.items():
        table.add_row(Text(group, style="bold underline"), "")
        for command in commands:
            table.add_row(Text(command.key_display), Text(f"{command.title} — {command.help}"))
        table.add_row("", "")
    table.add_row(Text("In panels", style="bold underline"), "")
    for panel, keys, what in keymap.PANEL_KEYS:
        table.add_row(Text(keys), Text(f"{panel}: {what}"))
    return table


def bindings_table(bindings: list[Binding], panel_keys: list[tuple[str, str]]) -> Table:
    """A table of a screen's own ``bindings`` (keys as typed: ``?, F1``) and then of
    ``panel_keys``: ``(keys, what they do)`` handled by its panels (moving, scrolling)."""
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for binding in bindings:
        names = [key.strip() for key in binding.key.split(",")]
        keys = ", ".join(keymap.KEY_NAMES.get(name, name.capitalize() if len(name) > 1 else name)
                         for name in names)
        table.add_row(Text(keys), Text(binding.description))
    table.add_row("", "")
    table.add_row(Text("In panels", style="bold underline"), "")
    for keys, what in panel_keys:
        table.add_row(Text(keys), Text(what))
    return table


class HelpScreen(ModalScreen[None]):
    """Lists every binding; any of q, ?, Escape, Enter closes it. ``title`` and ``table``: a
    screen's own (``bindings_table``); by default the inspector's, from ``keymap``."""

    BINDINGS = [Binding("q,question_mark,escape,enter,f1", "dismiss", "Close", show=True)]

    def __init__(self, title: str = "SnapState inspector — keys",
                 table: Table | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.table = table

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(Text.assemble((self.title_text, "bold"),
                                       ("   (q, ?, Esc or Enter closes this)", "dim")),
                         id="help-title")
            yield Static(self.table if self.table is not None else help_table(),
                         id="help-table")
            if self.table is None:  # the title says how to close it already
                yield Static(Text("Every action is also in the command palette (: or Ctrl+P).",
                                  style="dim"))

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
