"""The footer: Textual's ``Footer``, rebuilt only when the keys it shows change.

Textual's footer recomposes (removes and mounts one widget per key) on every bindings signal of
its screen, whether or not the keys changed: at the inspector's start it did so three times with
the same keys, about 15 ms each (``bench/bench_inspector.py``). This one first compares what it
would show with what it shows.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from .. import keymap

#: Below this many columns the footer drops the padding around its keys (Textual's
#: ``compact``) and the command palette's key (``?`` and the help list every key): at 100
#: columns its keys were cut mid-word ("q Qui▏").
COMPACT_BELOW = 120
#: Below this many columns each key shows its command's short label (``keymap.Command.short``:
#: "Next", "Prev"): at 80 columns, a terminal's default width, Quit and Fork were cut off.
SHORT_BELOW = 100


class KeysFooter(Footer):
    """A ``Footer`` that skips recomposing when its keys are unchanged, compact on narrow
    terminals (``COMPACT_BELOW``), with short labels on narrower ones (``SHORT_BELOW``: the
    commands' ``short``, and a screen's own bindings' from its ``SHORT_LABELS``, description
    -> short label)."""

    _shown: tuple | None = None
    short = False

    async def on_resize(self) -> None:
        width = self.app.size.width
        narrow, short = width < COMPACT_BELOW, width < SHORT_BELOW
        if narrow != self.compact or narrow == self.show_command_palette or short != self.short:
            self.compact = narrow
            self.show_command_palette = not narrow
            self.short = short
            await self.recompose()  # the palette key and the labels change with a rebuild only

    def compose(self) -> ComposeResult:
        labels: dict[str, str] = {}
        if self.short:  # the commands' short labels, and a screen's own (``SHORT_LABELS``)
            labels = {c.title: c.short for c in keymap.COMMANDS if c.short}
            labels.update(getattr(self.screen, "SHORT_LABELS", {}))
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.description in labels:
                widget.description = labels[widget.description]
            yield widget

    def keys_shown(self) -> tuple:
        """What the footer shows: each shown binding's key, label, action, state and tooltip
        (empty until the screen's bindings are ready)."""
        if not self._bindings_ready:
            return ()
        app = self.app
        return tuple((binding.key, app.get_key_display(binding), binding.description,
                      binding.action, enabled, tooltip, binding.group)
                     for _, binding, enabled, tooltip in self.screen.active_bindings.values()
                     if binding.show)

    async def recompose(self) -> None:
        if not self.is_attached:
            return
        shown = (self.compact, self.show_command_palette, self.short, self.keys_shown())
        if shown == self._shown:
            return
        self._shown = shown
        await super().recompose()
