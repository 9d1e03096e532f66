"""The search dialog: type a query, watch hits arrive, Enter on a hit to go there.

The search itself belongs to the app (``SnapStateApp.start_search``): it keeps running when
the dialog is closed (progress and hit count in the status bar, hits marked on the timeline,
``.``/``,`` step through them) and stops with ``s`` or a new query.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from ..safe_text import plain

SHOWN = 2000


class SearchScreen(ModalScreen[int | None]):
    """Dismisses with the chosen hit's step, or None."""

    BINDINGS = [Binding("escape", "close", "Close", show=False),
                Binding("q", "close", "Close", show=True),
                Binding("s", "stop", "Stop search", show=True)]

    def __init__(self) -> None:
        super().__init__()
        self._listed = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="search-box", classes="dialog"):
            yield Label("Search functions, files, labels and values (case-insensitive; "
                        "@text: functions, files and labels only). Enter: search; Tab: to the "
                        "hits; Esc: close (it goes on); in the hits, s: stop, q: close")
            yield Input(value=self.app.search.query, placeholder="text to find",
                        id="search-input")
            yield Label("", id="search-progress")
            yield OptionList(id="search-hits")

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        self.refresh_hits()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        query = event.value.strip()
        if not query:
            self.action_close()
            return
        self.app.start_search(query)  # stopping the old search refreshes this list: first
        self._listed = 0
        self.query_one(OptionList).clear_options()
        self.refresh_hits()

    def refresh_hits(self) -> None:
        """Show progress and list the hits not listed yet (called by the app as they come)."""
        if not self.is_attached:
            return
        state = self.app.search
        with state.lock:
            new = state.hits[self._listed:SHOWN]
            where = {step: state.where.get(step, "") for step in new}
            more = len(state.hits) > SHOWN
        self.query_one("#search-progress", Label).update(
            (state.summary() or "") + (f"; the first {SHOWN:,} listed here ('.' and ',' on "
                                       "the timeline go through them all)" if more else ""))
        if new:
            self._listed += len(new)
            hits = self.query_one(OptionList)
            hits.add_options(
                [Option(self._hit_text(step, where[step]), id=str(step)) for step in new])
            if hits.has_focus and hits.highlighted is None:  # Tab came before the hits
                hits.highlighted = 0

    def _hit_text(self, step: int, where: str) -> Text:
        text = Text(f"step {step:>8}  ", style="bold")
        summary = self.app.current_run.steps.summaries(step, step + 1)
        if summary:
            row = summary[0]
            text.append_text(plain(row.function or "?"))
            if row.label:
                text.append_text(plain(f"  {row.label}", "yellow"))
        text.append_text(plain(f"  ({where})", "dim"))
        return text

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Tab into the hits highlights the first one: Enter then opens it, and Down goes to
        the second (with nothing highlighted, Enter did nothing and the first Down only
        highlighted the first hit — a hit 'one row early' for who expected the second)."""
        hits = self.query_one("#search-hits", OptionList)
        if event.widget is hits and hits.highlighted is None and hits.option_count:
            hits.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id or 0))

    def action_stop(self) -> None:
        self.app.stop_search()
        self.refresh_hits()

    def action_close(self) -> None:
        self.dismiss(None)
