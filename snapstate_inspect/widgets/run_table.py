"""The runs table: one row per run of a store, virtualised like the timeline.

Only visible rows are drawn (``ScrollView`` + ``render_line``); rows come from a
``model.run_list.RunList``, which reads a page of runs from the store when a row of it is first
drawn, so a store of 100,000 runs opens as fast as one of ten. Columns: id, name, status,
user, host, start, duration, parent. Every text from the store is drawn as plain text.
"""

from __future__ import annotations

import datetime as dt

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..model.run_list import RunList, RunRow
from ..safe_text import escape_controls
from .status import STATUS_STYLE
from .timeline import CURSOR_BINDINGS

#: (title, width) of the fixed columns after the name; the name takes what is left.
COLUMNS = (("status", 9), ("user", 10), ("host", 14), ("start", 19), ("duration", 9),
           ("parent", 13))
ID_WIDTH = 8


def cells(row: RunRow | None, width: int) -> list[tuple[str, str]]:
    """``(text, column)`` cells of one row fitted to ``width`` (the header when ``row`` is
    None); the name column gets what the fixed columns leave."""
    fixed = ID_WIDTH + 1 + sum(w + 1 for _, w in COLUMNS)
    name_width = max(width - fixed, 8)
    if row is None:
        values = ["id", "name", *(title for title, _ in COLUMNS)]
    else:
        started = dt.datetime.fromtimestamp(row.started).strftime("%Y-%m-%d %H:%M:%S")
        values = [row.run.id[:8], row.name, row.status, row.user, row.host, started,
                  row.duration, row.parent]
    widths = [ID_WIDTH, name_width, *(w for _, w in COLUMNS)]
    names = ["id", "name", *(title for title, _ in COLUMNS)]
    out = []
    for value, size, name in zip(values, widths, names):
        text = escape_controls(str(value), keep_newlines=False)
        text = text[:size - 1] + "…" if len(text) > size else text
        align = ">" if name == "duration" else "<"
        out.append((f"{text:{align}{size}} ", name))
    return out


class RunTable(ScrollView, can_focus=True):
    """The runs of a ``RunList`` with a row cursor; Enter posts ``Chosen``."""

    COMPONENT_CLASSES = {"run-table--cursor", "run-table--dim"}
    DEFAULT_CSS = """
    RunTable { background: $surface; }
    RunTable > .run-table--cursor { background: $accent 40%; text-style: bold; }
    RunTable:focus > .run-table--cursor { background: $accent; }
    RunTable > .run-table--dim { color: $text-muted; }
    """
    BINDINGS = [*CURSOR_BINDINGS, Binding("enter", "choose", "Show run", show=True)]

    cursor: reactive[int] = reactive(0, repaint=False)

    class Chosen(Message):
        """The user picked ``run_id`` (Enter or a double click)."""

        def __init__(self, run_id: str) -> None:
            super().__init__()
            self.run_id = run_id

    def __init__(self, runs: RunList, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.runs = runs
        self._strips: LRUCache[tuple, Strip] = LRUCache(512)

    def set_runs(self, runs: RunList, cursor: int = 0) -> None:
        """Show another list (a new filter, or the store read again)."""
        self.runs = runs
        self._strips.clear()
        self.virtual_size = Size(0, runs.count)
        self.cursor = min(max(cursor, 0), max(runs.count - 1, 0))
        self.scroll_to_cursor()
        self.refresh()

    @property
    def current(self) -> RunRow | None:
        """The row under the cursor (None when the list is empty)."""
        return self.runs.row(self.cursor)

    def on_mount(self) -> None:
        self.virtual_size = Size(0, self.runs.count)

    def on_resize(self) -> None:
        self.virtual_size = Size(0, self.runs.count)
        self._strips.clear()
        self.scroll_to_cursor()

    def watch_cursor(self, old: int, new: int) -> None:
        top = self.scroll_offset.y
        self.scroll_to_cursor()
        if self.scroll_offset.y != top:
            self.refresh()
        else:
            self.refresh_line(old - int(top))
            self.refresh_line(new - int(top))

    def scroll_to_cursor(self) -> None:
        height = max(self.scrollable_content_region.height, 1)
        top = int(self.scroll_offset.y)
        if top <= self.cursor < top + height:
            return
        target = self.cursor - height + 1 if self.cursor >= top + height else self.cursor
        self.scroll_to(y=max(target, 0), animate=False, immediate=True)

    def render_line(self, y: int) -> Strip:
        index = int(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        if index >= self.runs.count:
            return Strip.blank(width, self.rich_style)
        key = (index, width, index == self.cursor, self.has_focus)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._render_row(index, width)
        return strip

    def _render_row(self, index: int, width: int) -> Strip:
        base = self.rich_style
        if index == self.cursor:
            base = base + self.get_component_rich_style("run-table--cursor")
        dim = base + self.get_component_rich_style("run-table--dim", partial=True)
        row = self.runs.row(index)
        if row is None:
            segments = [Segment("(unreadable run)", dim)]
        else:
            segments = []
            for text, column in cells(row, width):
                style = base
                if column == "status":
                    style = base + Style.parse(STATUS_STYLE.get(row.status, "") or "none")
                elif column in ("id", "start", "parent"):
                    style = dim
                segments.append(Segment(text, style))
        return Strip(segments).extend_cell_length(width, base).crop(0, width)

    def action_move(self, delta: int) -> None:
        if self.runs.count:
            self.cursor = min(max(self.cursor + delta, 0), self.runs.count - 1)

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(self.scrollable_content_region.height - 1, 1))

    def action_jump(self, target: int) -> None:
        if self.runs.count:
            self.cursor = self.runs.count - 1 if target < 0 else min(target, self.runs.count - 1)

    def action_choose(self) -> None:
        row = self.current
        if row is not None:
            self.post_message(self.Chosen(row.run.id))

    def on_click(self, event) -> None:
        offset = event.get_content_offset(self)  # rows count from the content, not a border
        index = int(self.scroll_offset.y) + offset.y if offset is not None else -1
        if 0 <= index < self.runs.count:
            if index == self.cursor and event.chain >= 2:
                self.action_choose()
            self.cursor = index
