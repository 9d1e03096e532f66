"""How deep the stack is where a program starts: recorded with the run's entry, the same on
replay.

Code can measure its own stack: a ``sys._getframe`` walk (Python-Markdown's
``util._get_stack_depth``, which its inline parser checks before each nested pattern),
``inspect.stack()``, ``len(traceback.extract_stack())``, or how deep a recursion gets before
``RecursionError``. Under ``snapstate record`` the program starts a few frames up, beneath the
wrapper's own; a replay child starts it from frames of its own. Unless the two stacks beneath
the program are equally deep, every such measure differs, and a traced run diverged at the
first step that returned one.

The entry says how many frames were beneath the *starter* — the function that runs the program:
``run_script``, ``runpy.run_module``, or the ``@record``-decorated workflow function itself
(``entry["start_depth"]``). The replay calls its starter through ``at_depth``, which puts frames
of its own beneath it until it is as deep. A replay cannot take frames away: an entry whose
program started shallower than the replay child's own frames (``python prog.py`` with
``record`` inside it: its ``__main__`` frame is the bottom of the stack) records no depth.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = ["frames_beneath", "depth_for_callee", "at_depth"]


def frames_beneath(frame: types.FrameType | None) -> int:
    """The number of frames beneath ``frame`` on its stack (0 for the bottom frame)."""
    count = 0
    while frame is not None and frame.f_back is not None:
        frame = frame.f_back
        count += 1
    return count


def depth_for_callee() -> int:
    """How many frames will be beneath a function the caller calls next: the caller's frame
    and every frame beneath it. What a recorder stores as ``entry["start_depth"]`` just before
    it calls the starter."""
    return frames_beneath(sys._getframe(1)) + 1


def at_depth(depth: Any, starter: Callable[..., Any]) -> Callable[..., Any]:
    """``starter``, to be called by the caller, made to run with ``depth`` frames beneath it:
    ``starter`` itself when the caller is already that deep or deeper (or ``depth`` is not an
    int: an entry that recorded none), else a callable that reaches it through the missing
    number of frames of this module's (SnapState's own, so never on a saved stack)."""
    if not isinstance(depth, int) or isinstance(depth, bool):
        return starter
    missing = depth - (frames_beneath(sys._getframe(1)) + 1)
    if missing <= 0:
        return starter

    # A Python function, not a ``functools.partial``: a call from C would also count once more
    # against the recursion limit, and the program would reach ``RecursionError`` sooner.
    def padded(*args: Any, **kwargs: Any) -> Any:
        if missing == 1:
            return starter(*args, **kwargs)
        return _through(missing - 1, starter, *args, **kwargs)

    return padded


def _through(frames: int, starter: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``starter`` with ``frames`` frames of this function beneath it (``frames`` >= 1)."""
    if frames > 1:
        return _through(frames - 1, starter, *args, **kwargs)
    return starter(*args, **kwargs)
