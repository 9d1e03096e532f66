"""The timeline: one row per step, virtualised so a million steps cost what a screenful does.

Only visible rows are drawn (``ScrollView`` + ``render_line``, the pattern of Toolong's
``log_lines.py``): rows are read from the reader in blocks of ``BLOCK`` steps
(``Steps.summaries``, one query each) kept in an LRU cache, and rendered strips are cached too.
A row shows: index, time offset from the run's start, a kind marker, function, label and the
number of locals changed at that step. An effect whose call raised (its journal entry's outcome,
``Run.raised_effect_steps``: one query per run length) is marked as a failure, like an
exception step: its own marker in the error colour.
"""

from __future__ import annotations

import os

from rich.segment import Segment
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from snapstate_capture import Run, SnapStateError, StepSummary

from ..safe_text import escape_controls

BLOCK = 256

#: Rows narrower than this leave out the time offset (an 80-column terminal's timeline: the
#: kind, function and label need the room).
NARROW_ROW = 40

#: Kind markers: one cell each, distinct by shape, not only by colour.
MARKERS = {"call": "▶", "return": "◀", "line": "·", "exception": "✖", "checkpoint": "●",
           "effect": "⇄", "gap": "┄", "waiting": "⏸"}

#: The marker of an effect whose call raised (caught or not): a failure, in the exception's
#: colour, and still told apart from an ``exception`` step by its shape.
RAISED_EFFECT_MARKER = "↯"


def _raised_effects(run: Run) -> frozenset[int]:
    """The steps of ``run`` that are effects whose call raised (none when the journal cannot
    be read: the rows still show, as plain effects)."""
    try:
        return frozenset(run.raised_effect_steps())
    except SnapStateError:
        return frozenset()


def _fork_origin(run: Run) -> float:
    """When a fork's history began: its parent's start (or its first step's time, when the
    parent is gone from the file), never later than the fork's own start."""
    try:
        return min(run.timeline.run(run.parent.run_id).started, run.started)
    except SnapStateError:
        first = run.steps.summaries(0, 1)
        return min(first[0].wall_time, run.started) if first else run.started


def _fork_row(run: Run) -> int | None:
    """The row of a fork's (or a continuation's) first own step — after the parent's steps it
    copied with their times, so the offsets jump there; marked ``⑂`` in the offset column — or
    None when it copied none (a run recorded with ``record(parent=...)``)."""
    step = run.parent.step
    try:
        copied = run.steps.summaries(step, step + 1)
    except SnapStateError:
        return None
    if not copied or copied[0].wall_time >= run.started:
        return None
    return step + 1


def format_offset(seconds: float) -> str:
    """``+1.234s``, ``+12m05s`` or ``+3h07m``: time since the run started (for a fork, since
    its parent started: its first steps are the parent's, copied with their times)."""
    if seconds < 0:
        seconds = 0.0
    if seconds < 60:
        return f"+{seconds:.3f}s"
    if seconds < 3600:
        return f"+{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"+{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


#: Keys of a virtual list with a row cursor: arrows, pages, first and last. Handled by the
#: widget's ``move``, ``page`` and ``jump`` actions (shared with ``AlignedTimeline``).
CURSOR_BINDINGS = [
    Binding("up", "move(-1)", "Previous", show=False),
    Binding("down", "move(1)", "Next", show=False),
    Binding("pageup", "page(-1)", "Page up", show=False),
    Binding("pagedown", "page(1)", "Page down", show=False),
    Binding("home", "jump(0)", "First", show=False),
    Binding("end", "jump(-1)", "Last", show=False),
]


class TimelineView(ScrollView, can_focus=True):
    """Rows of a run's steps with a cursor on the selected step.

    Posts ``Move`` when keys or clicks ask to select another step; the app decides and sets
    ``cursor``. ``set_run(run, count)`` shows another run; ``set_count(n)`` grows it (live).
    """

    COMPONENT_CLASSES = {"timeline--cursor", "timeline--exception", "timeline--index",
                         "timeline--offset", "timeline--label", "timeline--changed",
                         "timeline--hit"}

    DEFAULT_CSS = """
    TimelineView { background: $surface; }
    TimelineView > .timeline--cursor { background: $accent 40%; text-style: bold; }
    TimelineView:focus > .timeline--cursor { background: $accent; }
    TimelineView > .timeline--exception { color: $error; }
    TimelineView > .timeline--index { color: $text-muted; }
    TimelineView > .timeline--offset { color: $text-muted; }
    TimelineView > .timeline--label { color: $warning; }
    TimelineView > .timeline--changed { color: $success; }
    TimelineView > .timeline--hit { background: $warning 30%; }
    """

    BINDINGS = CURSOR_BINDINGS

    cursor: reactive[int] = reactive(0, repaint=False)

    class Move(Message):
        """Ask to select ``target`` (absolute; -1 = last) or move by ``delta`` steps."""

        def __init__(self, *, delta: int = 0, target: int | None = None) -> None:
            super().__init__()
            self.delta = delta
            self.target = target

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._run: Run | None = None
        self._count = 0
        self._blocks: LRUCache[int, list[StepSummary]] = LRUCache(64)
        self._strips: LRUCache[tuple, Strip] = LRUCache(1024)
        self._started = 0.0
        self._fork_row: int | None = None  # a fork's (or continuation's) first own step
        self._raised: frozenset[int] = frozenset()  # effect steps whose call raised
        self.hits: frozenset[int] = frozenset()

    @property
    def count(self) -> int:
        return self._count

    def set_run(self, run: Run, count: int) -> None:
        """Show ``run`` with ``count`` steps (rows re-read from the file)."""
        self._run = run
        self._started = run.started
        self._fork_row = None
        if run.parent is not None:  # a fork's first steps are its parent's, with their times
            self._started = _fork_origin(run)
            self._fork_row = _fork_row(run)
        self._blocks.clear()
        self._strips.clear()
        self._raised = _raised_effects(run)
        self._count = count
        self.set_count(count)

    def set_count(self, count: int) -> None:
        """The run now has ``count`` steps (a live recording grew)."""
        if count != self._count:
            last_block = self._count // BLOCK
            self._blocks.discard(last_block)  # the partial last block may have grown
            self._strips.clear()
            self._count = count
            if self._run is not None:  # a live run's journal grows with it
                self._raised = _raised_effects(self._run)
        self.virtual_size = Size(0, count)  # rows are cut to the panel: no sideways scroll
        self.refresh()

    def set_hits(self, hits: frozenset[int]) -> None:
        """Mark search hits (a set of step indexes)."""
        self.hits = hits
        self._strips.clear()
        self.refresh()

    def watch_cursor(self, old: int, new: int) -> None:
        """Scroll to the cursor; without a scroll only the two rows that changed are redrawn
        (a key then repaints 2 rows of this panel, not all of them)."""
        top = self.scroll_offset.y
        self.scroll_to_cursor()
        if self.scroll_offset.y != top:
            self.refresh()
        else:
            self.refresh_line(old)
            self.refresh_line(new)

    def scroll_to_cursor(self) -> None:
        """Scroll so the cursor row is visible (centred when it was far away)."""
        height = max(self.scrollable_content_region.height, 1)
        top = int(self.scroll_offset.y)
        if top <= self.cursor < top + height:
            return
        if self.cursor == top + height:
            target = top + 1
        elif self.cursor == top - 1:
            target = self.cursor
        else:
            target = max(self.cursor - height // 2, 0)
        self.scroll_to(y=target, animate=False, immediate=True)

    def on_resize(self) -> None:
        self.virtual_size = Size(0, self._count)
        self._strips.clear()
        self.scroll_to_cursor()

    # -- reading rows ----------------------------------------------------------------------
    def summary(self, index: int) -> StepSummary | None:
        """The row for step ``index`` (from the block cache; one query per new block)."""
        if self._run is None or not 0 <= index < self._count:
            return None
        block = index // BLOCK
        rows = self._blocks.get(block)
        if rows is None:
            try:
                rows = self._run.steps.summaries(block * BLOCK, (block + 1) * BLOCK)
            except SnapStateError:
                rows = []
            self._blocks[block] = rows
        offset = index - block * BLOCK
        return rows[offset] if offset < len(rows) else None

    # -- drawing ---------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        index = int(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        if index >= self._count:
            return Strip.blank(width, self.rich_style)
        key = (index, width, index == self.cursor, self.has_focus, index in self.hits)
        cached = self._strips.get(key)
        if cached is None:
            cached = self._render_row(index, width)
            self._strips[key] = cached
        return cached

    def _render_row(self, index: int, width: int) -> Strip:
        row = self.summary(index)
        base = self.rich_style
        get = self.get_component_rich_style
        if index == self.cursor:
            base = base + get("timeline--cursor")
        elif index in self.hits:
            base = base + get("timeline--hit")
        digits = max(len(str(max(self._count - 1, 0))), 3)
        segments = [Segment(f"{index:>{digits}} ", base + get("timeline--index", partial=True))]
        if row is None:
            segments.append(Segment("(unreadable step)", base))
        else:
            raised = row.kind == "effect" and index in self._raised
            failed = raised or row.kind == "exception"
            kind_style = base + get("timeline--exception", partial=True) if failed else base
            fork_row = self._fork_row == index  # a fork's first own step: the offsets jump
            if width >= NARROW_ROW:
                offset = ("⑂" if fork_row else "") + format_offset(row.wall_time - self._started)
                segments.append(Segment(f"{offset:>10} ",
                                        base + get("timeline--offset", partial=True)))
            elif fork_row:  # too narrow for time offsets: the kind and the label come first
                segments.append(Segment("⑂", base + get("timeline--offset", partial=True)))
            marker = RAISED_EFFECT_MARKER if raised else MARKERS.get(row.kind, "?")
            segments.append(Segment(marker + " ", kind_style))
            function = escape_controls(_shown_function(row.function, row.filename),
                                       keep_newlines=False)
            segments.append(Segment(function[:40], kind_style))
            if row.label:
                label = escape_controls(row.label, keep_newlines=False)[:60]
                # on the cursor row in the cursor's own colours: the label's warning colour is
                # the accent the focused cursor is drawn in, and vanished there
                label_style = base if index == self.cursor else \
                    base + get("timeline--label", partial=True)
                segments.append(Segment("  " + label, label_style))
            if row.n_changed:
                segments.append(Segment(f"  Δ{row.n_changed}",
                                        base + get("timeline--changed", partial=True)))
        return Strip(segments).extend_cell_length(width, base).crop(0, width)

    # -- input -----------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        self.post_message(self.Move(delta=delta))

    def action_page(self, direction: int) -> None:
        page = max(self.scrollable_content_region.height - 1, 1)
        self.post_message(self.Move(delta=direction * page))

    def action_jump(self, target: int) -> None:
        self.post_message(self.Move(target=target))

    def on_click(self, event) -> None:
        """Select the clicked row: ``event.y`` counts from the widget's border, rows from its
        content (one row lower: a click selected the step below the one clicked)."""
        offset = event.get_content_offset(self)
        index = int(self.scroll_offset.y) + offset.y if offset is not None else -1
        if 0 <= index < self._count:
            self.post_message(self.Move(target=index))


def _shown_function(function: str | None, filename: str | None) -> str:
    """A row's function: a module body names its file (``<module> runners.py``) — traced
    into a library, every module's body read ``<module>`` alike."""
    if function == "<module>" and filename:
        return f"<module> {os.path.basename(filename)}"
    return function or "?"
