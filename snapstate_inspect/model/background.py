"""Manners for background scans (search, change scans, history) running in worker threads.

A CPU-bound Python thread keeps the GIL for whole switch intervals, and a UI thread waiting
behind it answers keys late. Scans work in chunks; between chunks they sleep ``YIELD_SECONDS``
so the UI thread gets the interpreter at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

YIELD_SECONDS = 0.002


def pause() -> None:
    """Give other threads (the UI) the interpreter for a moment."""
    time.sleep(YIELD_SECONDS)


def polite(worker: Any) -> Callable[[], bool]:
    """A ``cancelled()`` callback for chunked scans that also yields between chunks."""
    def cancelled() -> bool:
        pause()
        return bool(worker.is_cancelled)
    return cancelled
