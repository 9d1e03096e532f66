"""``StepDiffScreen``: the diff of two steps filling the screen ("diff against the mark").

The diff is computed in a worker thread (a step diff is bounded by ``DiffOptions.time_limit``);
``q`` closes the screen. Used by the inspector's "diff the selected step against the mark".
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from snapstate_capture import SnapStateError, Step

from ..model.diff import StepDiff, StepDiffer
from ..model.value_diff import DiffOptions
from ..safe_text import plain
from ..widgets.diff_view import DiffView
from ..widgets.footer import KeysFooter
from .help import HelpScreen, bindings_table


class StepDiffScreen(Screen[None]):
    """The diff of step ``a`` (e.g. the marked step) → step ``b`` (the selected one).

    ``result`` holds the ``StepDiff`` once computed."""

    CSS_PATH = "../compare.tcss"
    AUTO_FOCUS = "#stepdiff-body"
    BINDINGS = [Binding("q", "close", "Close"), Binding("question_mark,f1", "help", "Help")]
    #: Keys the diff panel handles itself, for the help screen.
    PANEL_KEYS = [("↑ ↓ PgUp PgDn Home End", "Scroll the diff.")]

    def __init__(self, a: Step, b: Step, *, options: DiffOptions | None = None) -> None:
        super().__init__()
        self.a, self.b = a, b
        self.options = options or DiffOptions()
        self.result: StepDiff | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="stepdiff-title")
        yield DiffView(id="stepdiff-body")
        yield KeysFooter()

    def on_mount(self) -> None:
        title = Text("diff of the marked step → the selected step", style="bold")
        for name, step in (("A", self.a), ("B", self.b)):
            title.append("\n")  # plain() escapes control characters: the break goes alone
            title.append_text(plain(f"{name}: run {step.run.id[:8]} ({step.run.name}) "))
            title.append_text(plain(f"step {step.index} {step.kind} {step.label or ''} "
                                    f"{step.function}:{step.lineno}"))
        self.query_one("#stepdiff-title", Static).update(title)
        self.query_one(DiffView).show_message("comparing…")
        self._diff()

    @work(thread=True, exclusive=True)
    def _diff(self) -> None:
        try:
            result = StepDiffer(self.options).diff(self.a, self.b)
        except SnapStateError as exc:
            self.app.call_from_thread(self.query_one(DiffView).show_message, str(exc))
            return
        self.app.call_from_thread(self._show, result)

    def _show(self, result: StepDiff) -> None:
        self.result = result
        self.query_one(DiffView).show_diff(result, same_message="the two steps hold the same "
                                                                "values")

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Diff of two steps — keys",
                                        bindings_table(self.BINDINGS, self.PANEL_KEYS)))

    def action_close(self) -> None:
        self.dismiss()
