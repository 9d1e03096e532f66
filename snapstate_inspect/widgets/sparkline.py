"""A plot over the whole run: locals changed per slice of steps; click to jump there."""

from __future__ import annotations

from textual.events import Click
from textual.message import Message
from textual.widgets import Sparkline


class RunPlot(Sparkline):
    """``data`` holds one total per bucket of steps; clicking column x posts ``Jump``."""

    DEFAULT_CSS = """
    RunPlot { height: 1; }
    """

    class Jump(Message):
        """Go to the step at ``fraction`` (0 … 1) of the run."""

        def __init__(self, fraction: float) -> None:
            super().__init__()
            self.fraction = fraction

    def on_click(self, event: Click) -> None:
        width = max(self.size.width, 1)
        self.post_message(self.Jump(min(max(event.x / width, 0.0), 1.0)))
