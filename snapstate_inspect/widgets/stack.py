"""The stack of the selected step: one row per frame, innermost at the bottom, selectable."""

from __future__ import annotations

import os

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from snapstate_capture import Frame

from ..safe_text import place, plain


def frame_text(position: int, frame: Frame, width: int | None = None) -> Text:
    """``#2 plan  agent.py:14`` as plain text (function and file from the file are escaped).

    ``width``: the cells a row may take. A frame that does not fit on one line gets two: its
    function, then its place indented under it; each is cut to ``width`` with ``…`` — the
    function at its end, the place at its start, so the file's end and the line number stay
    (``…_agent.py:213``), where wrapping would have split the file name anywhere."""
    number = f"#{position} "
    where = place(os.path.basename(frame.filename), frame.lineno)
    function = frame.function or "?"
    if width is None or len(number) + len(function) + 2 + len(where) <= width:
        text = Text(number, style="dim")
        text.append_text(plain(function, "bold"))
        text.append_text(plain(f"  {where}", "dim"))
        return text
    indent = " " * len(number)
    text = Text(number, style="dim")
    text.append_text(plain(_cut_end(function, width - len(number)), "bold"))
    text.append("\n")
    text.append_text(plain(indent + _cut_start(where, width - len(indent)), "dim"))
    return text


def _cut_end(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells (at least one), ending with ``…`` when cut."""
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def _cut_start(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells (at least one), starting with ``…`` when cut."""
    return text if len(text) <= width else "…" + text[len(text) - max(width - 1, 0):]


class StackView(OptionList):
    """Frames of one step, outermost first; posts ``FrameChosen`` when the highlight moves."""

    class FrameChosen(Message):
        """The frame at ``position`` (0 = outermost) of step ``step`` was selected."""

        def __init__(self, step: int, position: int) -> None:
            super().__init__()
            self.step = step
            self.position = position

    def refresh(self, *regions, repaint: bool = True, layout: bool = False,
                recompose: bool = False):
        """Repaint without a layout pass: this panel's size is fixed by the screen's CSS, and a
        layout pass redraws the whole screen (the most expensive part of a key press)."""
        return super().refresh(*regions, repaint=repaint, layout=False, recompose=recompose)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._quiet = False
        self.step = -1
        self._frames: tuple[Frame, ...] = ()
        self._width: int | None = None

    def show(self, frames: tuple[Frame, ...], selected: int, step: int = -1) -> None:
        """Show the ``frames`` of ``step`` with the frame at ``selected`` highlighted; each
        row fits the panel's width (``frame_text``)."""
        self._quiet = True
        self.step = step
        self._frames = frames
        self._width = self._row_width()
        self.clear_options()
        self.add_options([Option(frame_text(i, f, self._width), id=str(i))
                          for i, f in enumerate(frames)])
        if frames:
            self.highlighted = min(max(selected, 0), len(frames) - 1)
        self._quiet = False

    def _row_width(self) -> int | None:
        """Cells a row may take: the panel's content width, scrollbar and padding left out
        (None before the first layout, when rows are made as wide as they are)."""
        width = self.scrollable_content_region.width
        return max(width, 8) if width > 0 else None

    def on_resize(self) -> None:
        """Rows are cut to the panel's width: a new width makes them again."""
        if self._frames and self._row_width() != self._width:
            selected = self.highlighted or 0
            self.show(self._frames, selected, self.step)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if not self._quiet and event.option_index is not None:
            self.post_message(self.FrameChosen(self.step, event.option_index))
