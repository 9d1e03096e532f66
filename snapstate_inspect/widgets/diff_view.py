"""``DiffView``: a scrollable panel showing a step diff (or a message while one is computed).

The lines come from ``diff_text.render_step_diff``: file data as plain text only. Reusable:
the compare screen puts it beside the aligned timelines, the step-diff screen fills a screen
with it.
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from ..diff_text import render_step_diff, step_title
from ..model.diff import StepDiff


class DiffView(VerticalScroll, can_focus=True):
    """Shows one ``StepDiff`` (``show_diff``) or a one-line message (``show_message``).

    ``text`` holds the plain text last shown (what Pilot tests read).
    """

    DEFAULT_CSS = """
    DiffView { background: $surface; padding: 0 1; }
    DiffView > #diff-body { width: auto; min-width: 100%; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""

    def compose(self):
        yield Static(id="diff-body")

    def show_message(self, message: str) -> None:
        """Replace the panel's content with ``message`` (our own text, never file data)."""
        self._update([Text(message, style="dim")])

    def show_diff(self, result: StepDiff, *, header: list[Text] | None = None,
                  same_message: str = "no differences in values") -> None:
        """Show ``result`` under ``header`` lines (e.g. the two steps' titles)."""
        lines = list(header or [])
        if header is None:
            for name, step in (("A ", result.a), ("B ", result.b)):
                title = Text(name, style="bold")
                title.append_text(step_title(step))
                lines.append(title)
        body = render_step_diff(result)
        if not body:
            body = [Text(same_message, style="green")]
        lines.extend(body)
        self._update(lines)

    def _update(self, lines: list[Text]) -> None:
        self.text = "\n".join(line.plain for line in lines)
        self.query_one("#diff-body", Static).update(Group(*lines))
        self.scroll_home(animate=False)
