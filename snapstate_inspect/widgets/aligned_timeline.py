"""``AlignedTimeline``: two runs' steps side by side, aligned, one row per pair.

Rows come from ``RunDiff.rows()``: an aligned pair, or a step present on one side only (the
other side left blank). The middle column marks each row: ``=`` same state, ``≠`` state
differs, ``+`` only in B, ``-`` only in A, ``?`` not compared. Only visible rows are drawn
(``ScrollView`` + ``render_line``), so long runs cost what a screenful does.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from snapstate_capture import Step

from ..model.alignment import AlignedRow
from ..safe_text import escape_controls
from .timeline import CURSOR_BINDINGS

MARKS = {"same": "=", "state": "≠", "inserted": "+", "deleted": "-", "unknown": "?"}


class AlignedTimeline(ScrollView, can_focus=True):
    """The aligned rows with a cursor; posts ``Selected`` whenever the cursor moves."""

    COMPONENT_CLASSES = {"aligned--cursor", "aligned--state", "aligned--inserted",
                         "aligned--deleted", "aligned--index"}

    DEFAULT_CSS = """
    AlignedTimeline { background: $surface; }
    AlignedTimeline > .aligned--cursor { background: $accent 40%; text-style: bold; }
    AlignedTimeline:focus > .aligned--cursor { background: $accent; }
    AlignedTimeline > .aligned--state { color: $warning; }
    AlignedTimeline > .aligned--inserted { color: $success; }
    AlignedTimeline > .aligned--deleted { color: $error; }
    AlignedTimeline > .aligned--index { color: $text-muted; }
    """

    BINDINGS = CURSOR_BINDINGS

    cursor: reactive[int] = reactive(0, repaint=False)

    class Selected(Message):
        """The cursor is on row ``row`` (an index into ``rows``)."""

        def __init__(self, row: int) -> None:
            super().__init__()
            self.row = row

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[AlignedRow] = []
        self._a: Sequence[Step] = ()
        self._b: Sequence[Step] = ()

    def set_rows(self, rows: list[AlignedRow], a: Sequence[Step], b: Sequence[Step],
                 cursor: int = 0) -> None:
        """Show ``rows`` of steps ``a`` and ``b`` with the cursor on row ``cursor``."""
        self.rows, self._a, self._b = rows, a, b
        self.virtual_size = Size(0, len(rows))
        self.cursor = min(max(cursor, 0), max(len(rows) - 1, 0))
        self.scroll_to_cursor()
        # again once the new virtual size is laid out: scrolling now is clamped to the old
        # one, and the first divergence far down stayed out of sight
        self.call_after_refresh(self.scroll_to_cursor)
        self.refresh()
        if rows:
            self.post_message(self.Selected(self.cursor))

    def watch_cursor(self, old: int, new: int) -> None:
        self.scroll_to_cursor()
        self.refresh()

    def scroll_to_cursor(self) -> None:
        height = max(self.scrollable_content_region.height, 1)
        top = int(self.scroll_offset.y)
        if not top <= self.cursor < top + height:
            self.scroll_to(y=max(self.cursor - height // 2, 0), animate=False, immediate=True)

    def on_resize(self) -> None:
        self.virtual_size = Size(0, len(self.rows))
        self.scroll_to_cursor()

    def move_to(self, row: int) -> None:
        """Put the cursor on ``row`` (clamped) and announce it."""
        if not self.rows:
            return
        row = min(max(row, 0), len(self.rows) - 1)
        if row != self.cursor:
            self.cursor = row
            self.post_message(self.Selected(row))
        else:
            self.scroll_to_cursor()  # ``f`` on the row already selected: bring it into view

    # -- drawing ---------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        index = int(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        row = self.rows[index]
        base = self.rich_style
        get = self.get_component_rich_style
        if index == self.cursor:
            base = base + get("aligned--cursor")
        mark_style = base
        if row.status in ("state", "inserted", "deleted"):
            mark_style = base + get(f"aligned--{row.status}", partial=True)
        half = max((width - 3) // 2, 8)
        segments = self._side(row.a, self._a, half, base)
        segments.append(Segment(f" {MARKS.get(row.status, '?')} ", mark_style))
        segments.extend(self._side(row.b, self._b, half, base))
        return Strip(segments).extend_cell_length(width, base).crop(0, width)

    def _side(self, index: int | None, steps: Sequence[Step], width: int, base) -> list[Segment]:
        if index is None or index >= len(steps):
            return [Segment(" " * width, base)]
        step = steps[index]
        digits = max(len(str(max(len(steps) - 1, 0))), 3)
        number = f"{index:>{digits}} "
        text = f"{step.kind} {step.function or '?'}"
        if step.label:
            text += f" {step.label}"
        text = escape_controls(text, keep_newlines=False)
        body = (text + " " * width)[: max(width - len(number), 0)]
        return [Segment(number, base + self.get_component_rich_style("aligned--index",
                                                                    partial=True)),
                Segment(body, base)]

    # -- input -----------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(self.scrollable_content_region.height - 1, 1))

    def action_jump(self, target: int) -> None:
        self.move_to(target if target >= 0 else len(self.rows) - 1)

    def on_click(self, event) -> None:
        """Select the clicked row (its content offset: ``event.y`` counts the border too)."""
        offset = event.get_content_offset(self)
        if offset is not None:
            self.move_to(int(self.scroll_offset.y) + offset.y)
