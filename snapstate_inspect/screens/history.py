"""The history of one variable: every step where it changed, old → new; Enter jumps there.

The scan runs in a worker over the whole run (``model.var_history.iter_changes``), listing
changes as they are found, with progress; closing the screen stops it.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from snapstate_capture import SnapStateError, Value

from ..model.values import VariableKey, children
from ..model.conversation import describe_change
from ..model.var_history import Change, Progress, iter_changes
from ..safe_text import plain

SHOWN = 5000
REPR = 60


class VariableHistoryScreen(ModalScreen[int | None]):
    """Lists the changes of ``key``; dismisses with the chosen step, or None."""

    BINDINGS = [Binding("q,h", "close", "Close", show=True),
                Binding("escape", "close", "Close", show=False)]

    def __init__(self, key: VariableKey) -> None:
        super().__init__()
        self.key = key
        self.changes: list[Change] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="history-box", classes="dialog"):
            yield Label(Text.assemble("History of ", plain(self.key.display, "bold"), " in ",
                                      plain(self.key.function, "bold"),
                                      f" (frame #{self.key.position}). Enter: go there; q: close"))
            yield Label("scanning…", id="history-progress")
            yield OptionList(id="history-list")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
        self._scan()

    @work(thread=True, exclusive=True, group="history")
    def _scan(self) -> None:
        worker = get_current_worker()
        app = self.app
        batch: list[tuple[Change, Text]] = []
        since = time.monotonic()  # step aside for keys pressed while it scans
        try:
            for item in iter_changes(app.current_run, self.key, 0, len(app.current_run.steps),
                                     loader=app.loader):
                if worker.is_cancelled:
                    return
                if isinstance(item, Change):
                    if len(self.changes) + len(batch) < SHOWN:
                        batch.append((item, self._change_text(item)))
                    else:
                        batch.append((item, Text()))
                else:
                    app.call_from_thread(self._add, batch, item)
                    batch = []
                    app.activity.pause(lambda: worker.is_cancelled, since)
        except SnapStateError as exc:  # a damaged file: show what was found, say why it stops
            app.call_from_thread(app.notify, f"history stopped: {exc}", severity="error")
        app.call_from_thread(self._add, batch, None)

    def _node(self, ref: dict[str, Any] | None) -> dict[str, Any] | None:
        if ref is None:
            return None
        node: dict[str, Any] | None = self.app.loader.load(
            Value(self.app.current_run.timeline, self.key.name, ref))
        for label in self.key.path:
            node = dict(children(node)).get(label) if node is not None else None
        return node

    def _repr(self, ref: dict[str, Any] | None) -> str:
        node = self._node(ref)
        if node is None:
            return "∅"
        text = str(node.get("repr", ""))
        return text if len(text) <= REPR else text[:REPR - 1] + "…"

    def _change_text(self, change: Change) -> Text:
        text = Text(f"step {change.step:>8}  ", style="bold")
        text.append({"added": "+ ", "removed": "- ", "changed": "~ "}[change.kind],
                     style={"added": "green", "removed": "red", "changed": "yellow"}[change.kind])
        if change.kind == "changed":  # a conversation says which message came, not two reprs
            said = describe_change(self._node(change.old), self._node(change.new))
            if said is not None:
                text.append_text(plain(said))
                return text
        text.append_text(plain(self._repr(change.old), "dim"))
        text.append(" → ")
        text.append_text(plain(self._repr(change.new)))
        return text

    def _add(self, batch: list[tuple[Change, Text]], progress: Progress | None) -> None:
        if not self.is_attached:
            return
        options = self.query_one(OptionList)
        room = SHOWN - len(self.changes)
        self.changes.extend(change for change, _ in batch)
        if room > 0 and batch:
            options.add_options([Option(text, id=str(change.step))
                                 for change, text in batch[:room]])
            if options.highlighted is None:  # the first change selected: ↓ goes to the next
                options.highlighted = 0
        label = self.query_one("#history-progress", Label)
        if progress is None:
            label.update(f"{len(self.changes):,} changes")
        else:
            label.update(f"scanning: {progress.done:,} of {progress.total:,} steps — "
                         f"{len(self.changes):,} changes")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id or 0))

    def action_close(self) -> None:
        self.workers.cancel_group(self, "history")
        self.dismiss(None)
