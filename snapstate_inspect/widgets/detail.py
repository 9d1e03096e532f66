"""The value panel: the selected value's path, full type, size, tags and repr (plain text).

Its size is fixed by the screen's CSS, so a new value repaints it without a layout pass; text
longer than the panel is cut at the bottom (the variables tree holds the structure).
"""

from __future__ import annotations

from textual.widgets import Static


class DetailView(Static):
    """A ``Static`` that never asks for a layout pass when its text changes."""

    DEFAULT_CSS = """
    DetailView { height: 100%; overflow: hidden; }
    """

    def refresh(self, *regions, repaint: bool = True, layout: bool = False,
                recompose: bool = False):
        return super().refresh(*regions, repaint=repaint, layout=False, recompose=recompose)
