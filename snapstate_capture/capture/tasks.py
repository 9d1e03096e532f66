"""The thread and asyncio task a step belongs to, and the pending tasks recorded with traced
steps (issue 6 point 4).

``pending_tasks()`` describes every unfinished task of the running event loop as
``[name, coroutine qualname, state, where suspended]`` lists (state ``running``, ``pending`` or
``cancelling``; where = ``file:line`` of the innermost awaiting frame), sorted by name. The
tracer stores the list only when it differs from the previous one. asyncio is never imported
here: a program that does not use it pays nothing.
"""

from __future__ import annotations

import sys
import threading
from typing import Any


def pending_tasks() -> list[list[Any]] | None:
    """The running loop's unfinished tasks, or None outside a running loop. Never raises."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        loop = asyncio._get_running_loop()
        if loop is None:
            return None
        current = asyncio.current_task(loop)
        out = []
        for task in list(asyncio.all_tasks(loop)):
            coro = task.get_coro()
            state = "running" if task is current else "pending"
            cancelling = getattr(task, "cancelling", None)
            if cancelling is not None and cancelling():
                state = "cancelling"
            out.append([task.get_name(), getattr(coro, "__qualname__", type(coro).__name__),
                        state, _where(coro)])
        out.sort()
        return out
    except Exception:  # noqa: BLE001 - a task list is best effort, never an error
        return None


def _where(coro: Any) -> str | None:
    """``file:line`` of the innermost frame the coroutine is suspended in (follows awaits)."""
    frame = None
    seen = 0
    while coro is not None and seen < 64:
        seen += 1
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None) or frame
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    if frame is None:
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def current_thread_name() -> str:
    """Name of the calling thread (``MainThread``, ``Thread-1 (worker)``, …)."""
    return threading.current_thread().name


def current_task_name() -> str | None:
    """Name of the running asyncio task in this thread, or None (asyncio never imported here)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        if asyncio._get_running_loop() is None:
            return None
        task = asyncio.current_task()
    except RuntimeError:
        return None
    return task.get_name() if task is not None else None


def call_site(frame: Any, line: int | None = None) -> str:
    """``"qualname /abs/file.py:line"`` of ``frame``: where an effect was called; ``line``
    instead of the frame's current line when given (a pool call's: ``effects.sited_at``)."""
    import os

    code = frame.f_code
    return (f"{getattr(code, 'co_qualname', code.co_name)} "
            f"{os.path.abspath(code.co_filename)}:{line or frame.f_lineno}")
