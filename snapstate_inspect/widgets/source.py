"""The source of the selected frame, from the text saved in the file, current line marked.

Highlighting uses pygments (through ``rich.syntax``) on the saved text after control characters
are escaped, so nothing in the file reaches the terminal raw. Only visible lines are drawn
(``render_line``). Files up to ``SYNC_LINES`` lines are highlighted at once; longer ones show
plain first and are highlighted in a worker thread. Highlighted files are cached by source hash.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual import work
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..safe_text import escape_controls

SYNC_LINES = 3000
THEME = "monokai"
#: Endings only pygments' Python lexer claims (its ``filenames``): no need to ask pygments, whose
#: guess imports every lexer module it has (a fifth of a second at start-up).
PYTHON_ENDINGS = (".py", ".pyw", ".pyi")


def lexer_name(filename: str, code: str) -> str:
    """The pygments lexer alias for ``filename`` holding ``code``: ``python`` for Python files
    (and when there is no name), else pygments' guess from the name and text."""
    if not filename or filename.lower().endswith(PYTHON_ENDINGS):
        return "python"
    return Syntax.guess_lexer(filename, code)


def highlight(lines: tuple[str, ...], filename: str) -> list[Text]:
    """Syntax-highlighted ``lines`` (escaped first), one ``Text`` per line, tabs expanded."""
    code = "\n".join(escape_controls(line, keep_newlines=False) for line in lines)
    lexer = lexer_name(filename, code)
    syntax = Syntax(code, lexer, theme=THEME, tab_size=4)
    text = syntax.highlight(code)
    out = text.split("\n", allow_blank=True)
    for line in out:
        line.expand_tabs(4)
    return list(out)[:len(lines)]


def plain_lines(lines: tuple[str, ...]) -> list[Text]:
    return [Text(escape_controls(line, keep_newlines=False).expandtabs(4)) for line in lines]


def _foreground(style: Style) -> Style:
    """A token's colour and emphasis without the theme's background (the marked line shows)."""
    return Style(color=style.color, bold=style.bold, italic=style.italic,
                 underline=style.underline)


class SourceView(ScrollView, can_focus=True):
    """Shows one file's saved source with ``lineno`` marked and scrolled into view."""

    COMPONENT_CLASSES = {"source--current", "source--gutter", "source--note"}

    DEFAULT_CSS = """
    SourceView { background: $surface; }
    SourceView > .source--current { background: $accent 35%; }
    SourceView > .source--gutter { color: $text-muted; }
    SourceView > .source--note { color: $text-muted; text-style: italic; }
    """

    _highlighted: LRUCache[str, list[Text]] = LRUCache(16)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: list[Text] = []
        self._key: str | None = None
        self._lineno = 0
        self._note = ""
        self._strips: LRUCache[tuple, Strip] = LRUCache(512)

    @property
    def lineno(self) -> int:
        return self._lineno

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def show(self, key: str | None, lines: tuple[str, ...], filename: str, lineno: int) -> None:
        """Show ``lines`` (the saved file, cache key ``key``) with ``lineno`` (1-based) marked."""
        key_changed = key != self._key
        if key_changed:
            self._key = key
            self._strips.clear()
            cached = self._highlighted.get(key) if key else None
            if cached is not None:
                self._lines = cached
            elif len(lines) <= SYNC_LINES:
                self._lines = highlight(lines, filename)
                if key:
                    self._highlighted[key] = self._lines
            else:
                self._lines = plain_lines(lines)
                self._highlight_later(key, lines, filename)
        self._note = "" if lines else "(no source saved for this frame)"
        self._lineno = lineno
        width = max((line.cell_len for line in self._lines), default=0) + 8
        self.virtual_size = Size(width, max(len(self._lines), 1))
        self.center_line()
        if key_changed:  # again once laid out: scrollbars coming or going change the height
            self.call_after_refresh(self.center_line)
        self.refresh()

    @work(thread=True, exclusive=True, group="source-highlight")
    def _highlight_later(self, key: str | None, lines: tuple[str, ...], filename: str) -> None:
        highlighted = highlight(lines, filename)
        self.app.call_from_thread(self._apply_highlight, key, highlighted)

    def _apply_highlight(self, key: str | None, highlighted: list[Text]) -> None:
        if key:
            self._highlighted[key] = highlighted
        if key == self._key:
            self._lines = highlighted
            self._strips.clear()
            self.refresh()

    def center_line(self) -> None:
        """Scroll so the marked line sits in the middle of the view."""
        height = max(self.scrollable_content_region.height, 1)
        # force: the scrollbars follow the new file's length only at the next layout; before
        # it, a view that showed a short file refuses to scroll (it stayed at the top after a
        # jump into a long file, until n then p)
        self.scroll_to(x=0, y=max(self._lineno - 1 - height // 2, 0), animate=False,
                       immediate=True, force=True)

    def on_resize(self) -> None:
        self._strips.clear()
        self.center_line()

    def render_line(self, y: int) -> Strip:
        index = int(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        scroll_x = int(self.scroll_offset.x)
        if not self._lines:
            if y == 0 and self._note:
                style = self.rich_style + self.get_component_rich_style("source--note")
                return Strip([Segment(self._note, style)]).extend_cell_length(width).crop(0, width)
            return Strip.blank(width, self.rich_style)
        if index >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        current = index + 1 == self._lineno
        key = (index, width, scroll_x, current)
        cached = self._strips.get(key)
        if cached is not None:
            return cached
        base = self.rich_style
        if current:
            base = base + self.get_component_rich_style("source--current")
        gutter_style = base + self.get_component_rich_style("source--gutter", partial=True)
        digits = max(len(str(len(self._lines))), 3)
        marker = "▶" if current else " "
        gutter = Segment(f"{marker}{index + 1:>{digits}} │ ", gutter_style)
        body = [Segment(seg.text, base + _foreground(seg.style) if seg.style else base)
                for seg in self._lines[index].render(self.app.console)
                if seg.text and seg.text != "\n"]
        strip = Strip(body).crop(scroll_x, scroll_x + width)
        strip = Strip([gutter, *strip]).extend_cell_length(width, base).crop(0, width)
        self._strips[key] = strip
        return strip
