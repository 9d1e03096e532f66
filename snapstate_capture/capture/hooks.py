"""Record hooks: how the layers above capture (the framework integrations) hear of ``record``
blocks, without importing the capture API.

``check(block)`` runs when a ``record`` is made (it may raise ``ValueError`` for bad options),
``start(block)`` once the block's run started (also in a replay child) and ``end(block)`` after
it ended. This module imports nothing of SnapState, so registering a hook — which
``integrations`` does on import, and pytest imports the plugin in every session — costs no
import of the recorder, the value layer or the store.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

Hook = Callable[[Any], None]

#: ``(check, start, end)`` in registration order.
_hooks: list[tuple[Hook | None, Hook, Hook]] = []

#: Positions in a ``_hooks`` entry, for ``run_hooks``.
START, END = 1, 2


def add_record_hooks(start: Hook, end: Hook, check: Hook | None = None) -> None:
    """Call ``start(block)`` when a ``record`` block's run starts and ``end(block)`` when it
    ended; ``check(block)`` validates a new block's options. Registering the same ``start``
    twice keeps the first registration."""
    if not any(hook[1] is start for hook in _hooks):
        _hooks.append((check, start, end))


def check_hooks(block: Any) -> None:
    """Run every ``check`` on a new ``record`` block; a ``ValueError`` propagates to
    ``record(...)``'s caller."""
    for check, _start, _end in list(_hooks):
        if check is not None:
            check(block)


def run_hooks(which: int, block: Any) -> None:
    """Run every ``start`` (``which=START``) or ``end`` (``END``) hook on ``block``. Never
    raises into the program: a failing hook is one note on stderr."""
    for hook in list(_hooks):
        try:
            hook[which](block)
        except Exception as exc:  # noqa: BLE001 - an integration never fails the program
            try:
                sys.stderr.write(f"snapstate: note: {type(exc).__name__}: {exc}\n")
            except Exception:  # noqa: BLE001
                pass
