"""The stack of the selected step: one row per frame, innermost at the bottom, selectable."""

from __future__ import annotations

import os

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from snapstate_capture import Frame

from ..safe_text import plain


def frame_text(position: int, frame: Frame) -> Text:
    """``#2 plan  agent.py:14`` as plain text (function and file from the file are escaped)."""
    text = Text(f"#{position} ", style="dim")
    text.append_text(plain(frame.function, "bold"))
    text.append_text(plain(f"  {os.path.basename(frame.filename)}:{frame.lineno}", "dim"))
    return text


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

    def show(self, frames: tuple[Frame, ...], selected: int, step: int = -1) -> None:
        """Show the ``frames`` of ``step`` with the frame at ``selected`` highlighted."""
        self._quiet = True
        self.step = step
        self.clear_options()
        self.add_options([Option(frame_text(i, f), id=str(i)) for i, f in enumerate(frames)])
        if frames:
            self.highlighted = min(max(selected, 0), len(frames) - 1)
        self._quiet = False

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if not self._quiet and event.option_index is not None:
            self.post_message(self.FrameChosen(self.step, event.option_index))
