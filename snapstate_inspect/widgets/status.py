"""The status bar: file, run, step i of n, run status, trust state, follow mode."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from ..safe_text import plain

STATUS_STYLE = {"finished": "green", "failed": "red", "crashed": "bold red", "running": "yellow",
                "waiting": "bold magenta", "sleeping": "bold blue"}


#: What the status bar says of the run's trust state (``status_text(trust=...)``): whether a
#: fork, replay or the REPL would load its payloads without ``--trust`` (trust/gate.py).
TRUST_LABELS = {"flag": ("trusted (--trust)", "green"),
                "own": ("signed by you", "green"),
                "teammate": ("signed by a trusted teammate", "green"),
                "checking": ("checking its signature…", "dim"),
                "untrusted": ("untrusted (previews only)", "dim"),
                "altered": ("altered since it was recorded (snapstate verify)", "bold red")}


def status_text(*, file: str, run_name: str, run_id: str, status: str, step: int, count: int,
                trust: str, follow: bool, note: str = "") -> Text:
    """The status line as plain text with styles (every value from the file escaped);
    ``trust`` is a key of ``TRUST_LABELS``."""
    text = Text()
    text.append_text(plain(file, "bold"))
    text.append("  run ", style="dim")
    text.append_text(plain(f"{run_name} {run_id[:8]}"))
    text.append("  ")
    text.append_text(plain(status, STATUS_STYLE.get(status, "")))
    text.append("  step ", style="dim")
    text.append(f"{step} of {count}" if count else "- of 0", style="bold")
    text.append("  ")
    label, style = TRUST_LABELS.get(trust, TRUST_LABELS["untrusted"])
    text.append(label, style=style)
    if follow:
        text.append("  following", style="bold yellow")
    if note:
        text.append("  ")
        text.append_text(plain(note, "italic"))
    return text


class StatusBar(Widget):
    """One line at the bottom; ``update_status(**fields)`` redraws it (no layout pass)."""

    DEFAULT_CSS = """
    StatusBar { height: 1; width: 1fr; background: $panel; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._text = Text()

    def update_status(self, **fields) -> None:
        text = status_text(**fields)
        if text.plain != self._text.plain or text.spans != self._text.spans:
            self._text = text
            self.refresh()

    def render(self) -> Text:
        return self._text
