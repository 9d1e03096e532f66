"""The runs of a shared store as a table: every run of every recorder, newest first.

Filter box (``/``): words search the name, id, host and user; ``status:S``, ``user:U``,
``host:H`` pick exactly. ``f`` cycles the status filter, ``R`` reads the store again (new runs,
statuses), Enter shows the run under the cursor, Escape closes. Rows are read a page at a time
as they are drawn (``model.run_list``), so 100,000 runs open like ten.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from ..model.run_list import STATUSES, RunList
from ..safe_text import plain
from ..widgets.run_table import RunTable, cells

#: Seconds the filter box waits after the last key before querying the store.
FILTER_DELAY = 0.25


class StoreRunsScreen(ModalScreen[str | None]):
    """Dismisses with the chosen run's id, or None (Escape / q)."""

    BINDINGS = [
        Binding("escape", "cancel", "Close", show=True),
        Binding("q", "cancel", "Close", show=False),
        Binding("slash", "filter", "Filter", show=True),
        Binding("f", "cycle_status", "Status filter", show=True),
        Binding("R", "reload", "Reload", show=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.status: str | None = None
        self._timer = None

    def compose(self) -> ComposeResult:
        with Vertical(id="store-runs-box", classes="dialog"):
            yield Label(id="store-runs-title")
            yield Input(placeholder="filter: words, status:failed, user:NAME, host:NAME",
                        id="store-runs-filter")
            yield Static(id="store-runs-header")
            yield RunTable(self._list(""), id="store-runs-table")
            yield Label(id="store-runs-count")

    def _list(self, query: str) -> RunList:
        return RunList(self.app.reader, query, status=self.status)

    def on_mount(self) -> None:
        self.query_one("#store-runs-title", Label).update(plain(
            f"Runs in {self.app.reader.path} (Enter: show the run; /: filter; f: status; "
            "Escape: close)"))
        table = self.query_one(RunTable)
        current = self.app.current_run
        if current is not None:
            index = table.runs.index_of(current.id)
            if index is None and table.runs.count and table.runs.row(0) is not None:
                index = table.runs.index_of(current.id)  # on the first page
            if index is not None:
                table.cursor = index
        table.focus()
        self._show_count()

    def on_resize(self) -> None:
        self._show_header()

    def _show_header(self) -> None:
        table = self.query_one(RunTable)
        width = table.scrollable_content_region.width or table.size.width
        self.query_one("#store-runs-header", Static).update(
            "".join(text for text, _ in cells(None, width)))

    def _show_count(self) -> None:
        runs = self.query_one(RunTable).runs
        what = f"{runs.count:,} run" + ("" if runs.count == 1 else "s")
        filters = [f"status:{self.status}"] if self.status else []
        if runs.query:
            filters.append(runs.query)
        if filters:
            what += f" matching {' '.join(filters)}"
        if runs.error:
            what += f"  ({runs.error})"
        self.query_one("#store-runs-count", Label).update(plain(what))
        self._show_header()

    def apply_filter(self, query: str | None = None) -> None:
        """Read the store again with ``query`` (default: the filter box's text)."""
        if query is None:
            query = self.query_one("#store-runs-filter", Input).value
        self.query_one(RunTable).set_runs(self._list(query))
        self._show_count()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(FILTER_DELAY, self.apply_filter)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        self.apply_filter(event.value)
        self.query_one(RunTable).focus()

    def on_run_table_chosen(self, event: RunTable.Chosen) -> None:
        event.stop()
        self.dismiss(event.run_id)

    def action_filter(self) -> None:
        self.query_one("#store-runs-filter", Input).focus()

    def action_cycle_status(self) -> None:
        position = STATUSES.index(self.status) if self.status in STATUSES else 0
        self.status = STATUSES[(position + 1) % len(STATUSES)]
        self.apply_filter()

    def action_reload(self) -> None:
        self.apply_filter()

    def action_cancel(self) -> None:
        self.dismiss(None)
