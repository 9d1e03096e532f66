"""``snapstate record`` waiting for the program's threads at its end, as the interpreter does.

Its own module, not ``record.py``: ``record.py`` hands control to the program (``include``'s
``HANDS_OVER``), so what it calls may be the program's steps; this waiting is snapstate's
machinery, and with ``--include '*'`` the ``threading`` calls it makes were traced as steps the
replay never makes.
"""

from __future__ import annotations

import sys
import threading


def join_program_threads() -> None:
    """Wait for non-daemon threads, as the interpreter does at exit, so they are recorded.

    Idle thread-pool workers (``concurrent.futures``, asyncio's default executor) are left
    to the interpreter: they end only once its exit hook has told their pools to shut down,
    so joining them here would wait forever (an Agents SDK run's sync tools leave some)."""
    pool_worker = getattr(sys.modules.get("concurrent.futures.thread"), "_worker", None)
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon:
            continue
        if pool_worker is not None and getattr(thread, "_target", None) is pool_worker:
            continue
        thread.join()
