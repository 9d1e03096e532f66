"""The help screen: every binding of the inspector, grouped, generated from ``keymap``."""

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


class HelpScreen(ModalScreen[None]):
    """Lists every binding; any of q, ?, Escape, Enter closes it."""

    BINDINGS = [Binding("q,question_mark,escape,enter,f1", "dismiss", "Close", show=True)]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(Text.assemble(("SnapState inspector — keys", "bold"),
                                       ("   (q, ?, Esc or Enter closes this)", "dim")),
                         id="help-title")
            yield Static(help_table(), id="help-table")
            yield Static(Text("Close with q, ?, Esc or Enter. Every action is also in the command "
                              "palette (: or Ctrl+P).", style="dim"))

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
