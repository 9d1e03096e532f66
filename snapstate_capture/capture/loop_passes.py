"""Whether an ``async`` effect came back in the same pass of the event loop as the one before.

asyncio runs the callbacks that were ready when a pass began, in order; what they make ready
runs in a later pass. When two effects come back in one pass — their timers or sockets were
due together — the second task resumes before anything the first one's task woke on its way
(a worker its ``queue.put`` woke); when the second came back in a later pass, those ran first.
That decides which worker takes the next job from a shared queue, and a replay, whose effects
answer from the journal, cannot tell it from the order of the steps alone.

``passes_since_previous()`` tells, at an effect's return while recording, how many passes
of the loop went by since the previous effect's return on it: a chain of marker callbacks,
the first queued at that return, each queuing the next as it runs, up to ``PASS_LIMIT``. None
run yet: this task was resumed ahead of what that one did next (the same pass). Kept in the
journal (``"t"``: the same pass or not; ``"n"``: passes, from 2), it lets replay release a
served call straight away (ahead of the follow-ups), or as many passes of the loop behind
them (``replay/effect_turns.py``): a task that the previous effect's task woke through a
future — ``asyncio.wait(..., return_when=FIRST_COMPLETED)`` takes two passes to wake its
waiter — ran before a call that came back later, and its ``done`` set held only the first.
The markers are no-op callbacks: the program's own callbacks run in the order they would
have; a loop with nothing else to do makes up to ``PASS_LIMIT`` quick passes before it waits.

``before_call()`` and ``suspended(mark)`` tell, the same way, whether an ``async`` call
suspended its task at all: one that returned without (a cache hit that awaits nothing) let
its task run on in the same pass, and its served replay must not yield either (``"u"``).
"""

from __future__ import annotations

import sys
import weakref
from typing import Any


class _Mark:
    """A no-op callback queued on an event loop at an ``async`` effect's call: ``ran`` once the
    loop went on past it. While no effect has returned on the loop yet, it queues itself
    again at each pass (up to ``PASS_LIMIT``; ``passes``) until the call returns (``done``):
    the first effect to come back on a loop is counted from its own call."""

    __slots__ = ("ran", "passes", "done")

    def __init__(self) -> None:
        self.ran = False
        self.passes = 0
        self.done = False


#: The most passes of the loop counted after an effect's return (``passes_since_previous``):
#: more than the two a task woken through a future takes, and the one of a queue's getter.
PASS_LIMIT = 8


class _Passes:
    """The passes of the loop since an effect's return, counted by a chain of no-op
    callbacks (``_count``) while it is its loop's last return."""

    __slots__ = ("passes",)

    def __init__(self) -> None:
        self.passes = 0


#: Each event loop's pass count started at the last ``async`` effect's return on it.
_last_return: weakref.WeakKeyDictionary[Any, _Passes] = weakref.WeakKeyDictionary()
#: The same, of the last served effect's return on replay (``count_from_here``).
_last_served: weakref.WeakKeyDictionary[Any, _Passes] = weakref.WeakKeyDictionary()


def passes_since_previous(mark: _Mark | None = None) -> int | None:
    """At an ``async`` effect's return in an asyncio task (recording): the passes of the loop
    since the previous effect returned on it — 0 when in the same pass, ahead of this task's
    resumption (see the module docstring); at most ``PASS_LIMIT``. For the first effect on a
    loop, the passes since its own call (``mark``, from ``before_call``; 1 without one: a
    ticker task counting passes read another count at the first call's return, helper-41 4
    of 4). None outside a running asyncio loop. Never raises."""
    loop = _running_loop()
    if mark is not None:
        mark.done = True
    if loop is None:
        return None
    previous = _last_return.get(loop)
    if _counting(loop, _last_return) is None:
        return None
    if previous is None:
        return max(mark.passes, 1) if mark is not None else 1
    return previous.passes


def count_from_here() -> _Passes | None:
    """On replay, at a served ``async`` effect's return: a count of the passes of the running
    loop from now (``passes``, up to ``PASS_LIMIT``; it stops at the next such return), for
    the next served call to come back as many passes later as it was recorded
    (``replay/effect_turns.py``). None outside a running asyncio loop. Never raises."""
    loop = _running_loop()
    return None if loop is None else _counting(loop, _last_served)


def _counting(loop: Any, last: weakref.WeakKeyDictionary[Any, _Passes]) -> _Passes | None:
    counting = _Passes()
    try:
        loop.call_soon(_count, counting, loop, last)
    except Exception:  # noqa: BLE001 - a closed loop, or one that refuses callbacks
        return None
    last[loop] = counting
    return counting


def before_call() -> _Mark | None:
    """Before an ``async`` effect's call (recording): a marker queued on the running loop;
    None outside one. Never raises."""
    loop = _running_loop()
    return None if loop is None else _queued(loop)


def suspended(mark: _Mark | None) -> bool | None:
    """After the call: whether it suspended its task (the loop ran the marker meanwhile);
    None when unknown."""
    if mark is None:
        return None
    mark.done = True
    return mark.ran


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
        loop.call_soon(_ran, mark, loop)
    except Exception:  # noqa: BLE001 - a closed loop, or one that refuses callbacks
        return None
    return mark


def _ran(mark: _Mark, loop: Any) -> None:
    mark.ran = True
    mark.passes += 1
    if not mark.done and mark.passes < PASS_LIMIT and loop not in _last_return:
        try:
            loop.call_soon(_ran, mark, loop)
        except Exception:  # noqa: BLE001 - the loop is closing
            pass


def _count(counting: _Passes, loop: Any, last: weakref.WeakKeyDictionary[Any, _Passes]
           ) -> None:
    counting.passes += 1
    if counting.passes < PASS_LIMIT and last.get(loop) is counting:
        try:
            loop.call_soon(_count, counting, loop, last)
        except Exception:  # noqa: BLE001 - the loop is closing
            pass
