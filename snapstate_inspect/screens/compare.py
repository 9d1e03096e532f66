"""Comparing two runs side by side (issue 8, point 4): ``CompareScreen(run_a, run_b)``.

Two aligned timelines (``AlignedTimeline``: one row per aligned pair, one-sided steps against
a blank) and, beside them, the variable diff of the selected row (``DiffView``). The runs are
aligned in a worker thread (``alignment.diff_runs``); then the first divergence is selected.
Each row's step diff is computed in a worker too (exclusive: moving on cancels the last one),
with the differences both runs start with (inputs) set aside, as ``snapstate diff`` does.

Keys: ↑ ↓ PgUp PgDn Home End move; ``f`` first divergence; ``n`` / ``p`` next / previous
divergent row; ``tab`` between panels; ``?`` lists these keys; Escape closes the screen and
``q`` quits, as everywhere in the inspector.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import get_current_worker

from snapstate_capture import Run, SnapStateError

from ..diff_text import step_title
from ..model.alignment import AlignedRow, RunDiff, diff_runs
from ..model.diff import StepDiff
from ..model.value_diff import DiffOptions
from ..safe_text import plain
from ..widgets.aligned_timeline import AlignedTimeline
from ..widgets.diff_view import DiffView
from ..widgets.footer import KeysFooter
from .help import HelpScreen, bindings_table


class CompareScreen(Screen[int | None]):
    """Runs ``run_a`` and ``run_b`` (from one file or two) aligned, with the diff of the
    selected pair. ``result`` is the ``RunDiff`` once the alignment is done (None before);
    ``shown`` the ``StepDiff`` in the diff panel. Closed (Escape), it gives the step of run A
    its selected row is at (``selected_a_step``), for the inspector to show."""

    CSS_PATH = "../compare.tcss"
    AUTO_FOCUS = "#aligned"
    BINDINGS = [
        Binding("f", "first_divergence", "First divergence"),
        Binding("n", "next_divergence", "Next divergence"),
        Binding("p", "prev_divergence", "Previous divergence"),
        Binding("escape", "close", "Close the comparison"),
        Binding("question_mark,f1", "help", "Help"),
        Binding("q", "quit", "Quit"),  # as on every screen of the inspector
    ]
    #: Keys the panels handle themselves, for the help screen.
    PANEL_KEYS = [("↑ ↓ PgUp PgDn Home End", "Move the selected pair of steps; its diff follows."),
                  ("Tab, Shift+Tab", "Move between the aligned runs and the diff.")]
    #: The footer's labels under ``footer.SHORT_BELOW`` columns.
    SHORT_LABELS = {"First divergence": "First", "Next divergence": "Next",
                    "Previous divergence": "Prev", "Close the comparison": "Close"}

    def __init__(self, run_a: Run, run_b: Run, *, options: DiffOptions | None = None) -> None:
        super().__init__()
        self.run_a, self.run_b = run_a, run_b
        self.options = options or DiffOptions()
        self.result: RunDiff | None = None
        self.rows: list[AlignedRow] = []
        self.shown: StepDiff | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="compare-title")
        with Horizontal(id="compare-main"):
            yield AlignedTimeline(id="aligned")
            yield DiffView(id="compare-diff")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#aligned").border_title = "A | B"
        self.query_one("#compare-diff").border_title = "Diff"
        self._set_title("aligning the runs…")
        self.query_one(DiffView).show_message("aligning the runs…")
        self._align()

    def _set_title(self, status: str) -> None:
        title = Text()
        for name, run in (("A ", self.run_a), ("  B ", self.run_b)):
            title.append(name, style="bold")
            title.append_text(plain(f"{run.timeline.path.name} run {run.id[:8]} ({run.name})"))
        title.append("\n")
        title.append_text(plain(status, "bold"))
        self.query_one("#compare-title", Static).update(title)

    @work(thread=True, exclusive=True, group="align")
    def _align(self) -> None:
        try:
            result = diff_runs(self.run_a, self.run_b, options=self.options)
        except SnapStateError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._aligned, result)

    def _failed(self, message: str) -> None:
        self._set_title("could not compare the runs")
        self.query_one(DiffView).show_message(message)

    def _aligned(self, result: RunDiff) -> None:
        self.result = result
        self.rows = rows = result.rows()
        first = result.first_divergence
        counts = result.counts()
        summary = (f"{counts['matched']} steps aligned, {counts['inserted']} only in B, "
                   f"{counts['deleted']} only in A — ")
        if first is not None:
            summary += f"first divergence: {first.message}"
        elif result.inputs is not None:
            summary += "no divergence beyond the inputs the runs start with"
        else:
            summary += "identical"
        self._set_title(summary)
        self.query_one(AlignedTimeline).set_rows(rows, result.a_steps, result.b_steps,
                                                 cursor=self.first_divergence_row())

    def first_divergence_row(self) -> int:
        """The row of the first divergence (0 when the runs do not diverge)."""
        result = self.result
        if result is None or result.first_divergence is None:
            return 0
        first = result.first_divergence
        for position, row in enumerate(self.rows):
            if (first.a_step is not None and row.a == first.a_step) or (
                    first.a_step is None and row.b == first.b_step):
                return position
        return 0

    # -- the diff of the selected row ------------------------------------------------------
    def on_aligned_timeline_selected(self, message: AlignedTimeline.Selected) -> None:
        if self.result is None:
            return
        self.query_one(DiffView).show_message("comparing…")
        self._diff_row(message.row)

    @work(thread=True, exclusive=True, group="row-diff")
    def _diff_row(self, position: int) -> None:
        result = self.result
        if result is None or not 0 <= position < len(self.rows):
            return
        row = self.rows[position]
        try:
            found = result.pair_diff(row)
        except SnapStateError as exc:
            self.app.call_from_thread(self.query_one(DiffView).show_message, str(exc))
            return
        if not get_current_worker().is_cancelled and found is not None:
            self.app.call_from_thread(self._show, row, found)

    def _show(self, row: AlignedRow, found: StepDiff) -> None:
        self.shown = found
        header = []
        for name, index, step in (("A ", row.a, found.a), ("B ", row.b, found.b)):
            line = Text(name, style="bold")
            line.append_text(step_title(step))
            if index is None:
                line.append("  (no step here on this side: the last common step)", style="dim")
            header.append(line)
        self.query_one(DiffView).show_diff(found, header=header)

    # -- actions ---------------------------------------------------------------------------
    def action_first_divergence(self) -> None:
        self.query_one(AlignedTimeline).move_to(self.first_divergence_row())

    def action_next_divergence(self) -> None:
        self._jump(1)

    def action_prev_divergence(self) -> None:
        self._jump(-1)

    def _jump(self, direction: int) -> None:
        """To the start of the next (previous) stretch of divergent rows."""
        timeline = self.query_one(AlignedTimeline)
        rows = timeline.rows
        position = timeline.cursor
        while 0 <= position + direction < len(rows):
            here, before = rows[position + direction], rows[position + direction - 1]
            position += direction
            starts = position == 0 or before.status != here.status
            if here.status != "same" and starts:
                timeline.move_to(position)
                return

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Comparing two runs — keys",
                                        bindings_table(self.BINDINGS, self.PANEL_KEYS)))

    def action_close(self) -> None:
        self.dismiss(self.selected_a_step())

    def selected_a_step(self) -> int | None:
        """Run A's step of the selected row; for a row only in B, A's step above it; None
        before the alignment or above A's first step."""
        position = self.query_one(AlignedTimeline).cursor
        return next((row.a for row in reversed(self.rows[:position + 1]) if row.a is not None),
                    None)

    def action_quit(self) -> None:
        self.app.exit()
