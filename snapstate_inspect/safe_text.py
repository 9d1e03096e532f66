"""Text from a timeline file, made safe to print: no markup, no terminal control sequences.

Everything a file contains is the recorded program's data, and possibly a stranger's: a value
holding ``"\\x1b]52;…"`` must not reach the terminal as an escape sequence, and one holding
``"[bold]"`` must not become Rich markup (DESIGN.md "Trust").
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a Text is made: ``snapstate record`` imports this module
    from rich.text import Text  # before the program, which must find no rich loaded by us

# C0 controls except tab/newline, DEL, C1 controls, and bidi/invisible format characters.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, *, keep_newlines: bool = True) -> str:
    """Return ``text`` with control characters shown as ``\\xNN`` / ``\\uNNNN`` escapes.

    Newlines and tabs are kept when ``keep_newlines`` (for multi-line source), else escaped.
    """
    text = _CONTROL.sub(_escape, text)
    if not keep_newlines:
        text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return text


#: Characters of one line of file text shown at most: a hostile file's 100 MB string must not
#: cost 100 MB of layout. Multi-line text (source) gets ``MAX_TEXT``.
MAX_LINE = 10_000
MAX_TEXT = 4_000_000


def clip_text(text: str, limit: int) -> str:
    """Return ``text`` cut to ``limit`` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def place(filename: str, lineno: int | None) -> str:
    """``agent.py:14``: where a frame is, as shown; a module body's call step, which CPython
    3.11 records at line 0 (before its first line runs), reads ``agent.py`` alone."""
    return f"{filename}:{lineno}" if lineno and lineno > 0 else filename


def plain(text: object, style: str = "", *, single_line: bool = True,
          limit: int | None = None) -> Text:
    """Return a Rich ``Text`` holding ``text`` literally (never parsed as markup), control
    characters escaped and cut to ``limit`` characters (default ``MAX_LINE`` for one line,
    ``MAX_TEXT`` otherwise)."""
    from rich.text import Text

    bound = limit if limit is not None else MAX_LINE if single_line else MAX_TEXT
    return Text(escape_controls(clip_text(str(text), bound), keep_newlines=not single_line),
                style=style)
