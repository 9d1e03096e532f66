"""Go to step N: a one-line dialog (negative numbers count from the end)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


def parse_step(text: str, count: int) -> int | None:
    """The step index typed in ``text`` (``-1`` = last), or None when it is not one."""
    try:
        value = int(text.strip().replace("_", "").replace(",", ""))
    except ValueError:
        return None
    if value < 0:
        value += count
    return value if 0 <= value < count else None


class GotoScreen(ModalScreen[int | None]):
    """Asks for a step number; dismisses with the index, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count

    def compose(self) -> ComposeResult:
        with Vertical(id="goto-box", classes="dialog"):
            yield Label(f"Go to step (0 – {max(self.count - 1, 0)}; -1 = last). "
                        "Enter to go, empty Enter to cancel.")
            yield Input(placeholder="step number", id="goto-input")
            yield Label("", id="goto-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            self.dismiss(None)
            return
        step = parse_step(event.value, self.count)
        if step is None:
            self.query_one("#goto-error", Label).update(
                f"not a step of this run: {event.value[:40]!r}")
            event.input.value = ""  # the next number is typed afresh, not appended
            return
        self.dismiss(step)

    def action_cancel(self) -> None:
        self.dismiss(None)
