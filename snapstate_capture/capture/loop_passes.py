"""Whether an ``async`` effect came back in the same pass of the event loop as the one before.

asyncio runs the callbacks that were ready when a pass began, in order; what they make ready
runs in a later pass. When two effects come back in one pass — their timers or sockets were
due together — the second task resumes before anything the first one's task woke on its way
(a worker its ``queue.put`` woke); when the second came back in a later pass, those ran first.
That decides which worker takes the next job from a shared queue, and a replay, whose effects
answer from the journal, cannot tell it from the order of the steps alone.

``returned_with_previous()`` tells, at an effect's return while recording: a marker callback
queued at the previous effect's return on this loop has not run yet — so this task was
resumed ahead of what that one did next. Kept in the journal (``"t"`` in the row's value
ref), it lets replay release a served call straight away (ahead of the follow-ups) or behind
them (``replay/effect_turns.py``). The marker is a no-op callback: the program's own callbacks
run in the order they would have.

``before_call()`` and ``suspended(mark)`` tell, the same way, whether an ``async`` call
suspended its task at all: one that returned without (a cache hit that awaits nothing) let
its task run on in the same pass, and its served replay must not yield either (``"u"``).
"""

from __future__ import annotations

import sys
import weakref
from typing import Any


class _Mark:
    """A no-op callback queued on an event loop: ``ran`` once the loop went on past it."""

    __slots__ = ("ran",)

    def __init__(self) -> None:
        self.ran = False


#: Each event loop's marker queued at the last ``async`` effect's return on it.
_last_return: weakref.WeakKeyDictionary[Any, _Mark] = weakref.WeakKeyDictionary()


def returned_with_previous() -> bool | None:
    """At an ``async`` effect's return in an asyncio task (recording): True when the previous
    effect returned on this loop in the same pass, ahead of this task's resumption (see the
    module docstring); False when not; None outside a running asyncio loop. Never raises."""
    loop = _running_loop()
    if loop is None:
        return None
    previous = _last_return.get(loop)
    mark = _queued(loop)
    if mark is None:
        return None
    _last_return[loop] = mark
    return previous is not None and not previous.ran


def before_call() -> _Mark | None:
    """Before an ``async`` effect's call (recording): a marker queued on the running loop;
    None outside one. Never raises."""
    loop = _running_loop()
    return None if loop is None else _queued(loop)


def suspended(mark: _Mark | None) -> bool | None:
    """After the call: whether it suspended its task (the loop ran the marker meanwhile);
    None when unknown."""
    return None if mark is None else mark.ran


def _running_loop() -> Any:
    asyncio = sys.modules.get("asyncio")  # (a program that never imported it has none)
    if asyncio is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _queued(loop: Any) -> _Mark | None:
    mark = _Mark()
    try:
        loop.call_soon(_ran, mark)
    except Exception:  # noqa: BLE001 - a closed loop, or one that refuses callbacks
        return None
    return mark


def _ran(mark: _Mark) -> None:
    mark.ran = True
