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


#: The most passes of the loop counted (``passes_since_previous``): more than the two a task
#: woken through a future takes, and the one of a queue's getter.
PASS_LIMIT = 8


class _Passes:
    """The passes of a loop counted by a chain of no-op callbacks (``_tick``), each queuing
    the next as it runs, until ``PASS_LIMIT`` or ``stopped``. Queued at an effect's call
    (``before_call``) it tells whether the call suspended its task (``ran``); the chain
    goes on only while no effect has returned on the loop (``until_a_return``): the first
    effect to come back on a loop is counted from its own call. Queued at a return, it runs
    until the next return stops it."""

    __slots__ = ("passes", "stopped", "until_a_return")

    def __init__(self, until_a_return: bool = False) -> None:
        self.passes = 0
        self.stopped = False
        self.until_a_return = until_a_return

    @property
    def ran(self) -> bool:
        return self.passes > 0


#: Each event loop's pass count started at the last ``async`` effect's return on it.
_last_return: weakref.WeakKeyDictionary[Any, _Passes] = weakref.WeakKeyDictionary()


def passes_since_previous(mark: _Passes | None = None) -> int | None:
    """At an ``async`` effect's return in an asyncio task (recording): the passes of the loop
    since the previous effect returned on it — 0 when in the same pass, ahead of this task's
    resumption (see the module docstring); at most ``PASS_LIMIT``. For the first effect on a
    loop, the passes since its own call (``mark``, from ``before_call``; 1 without one: a
    ticker task counting passes read another count at the first call's return, helper-41 4
    of 4). None outside a running asyncio loop. Never raises."""
    loop = _running_loop()
    if mark is not None:
        mark.stopped = True
    if loop is None:
        return None
    previous = _last_return.get(loop)
    counting = _started(loop)
    if counting is None:
        return None
    _last_return[loop] = counting
    if previous is None:
        return max(mark.passes, 1) if mark is not None else 1
    previous.stopped = True
    return previous.passes


def count_from_here(previous: _Passes | None = None) -> _Passes | None:
    """On replay, at a served ``async`` effect's return: a count of the passes of the running
    loop from now (``passes``, up to ``PASS_LIMIT``), for the next served call to come back as
    many passes later as it was recorded (``replay/effect_turns.py``); ``previous``, the count
    of the return before, is stopped. None outside a running asyncio loop. Never raises."""
    if previous is not None:
        previous.stopped = True
    loop = _running_loop()
    return None if loop is None else _started(loop)


def before_call() -> _Passes | None:
    """Before an ``async`` effect's call (recording): a pass count queued on the running
    loop; None outside one. Never raises."""
    loop = _running_loop()
    return None if loop is None else _started(loop, until_a_return=True)


def suspended(mark: _Passes | None) -> bool | None:
    """After the call: whether it suspended its task (the loop ran the first callback of
    ``mark`` meanwhile); None when unknown."""
    if mark is None:
        return None
    mark.stopped = True
    return mark.ran


def journal_ref(passes: int | None) -> dict[str, int]:
    """The journal row's value-ref keys for ``passes`` (``capture/step_capture.py``): ``"t"``
    1 when the call came back in the previous effect's pass (else 0), and ``"n"``, the
    passes, from 2; none when unknown."""
    if passes is None:
        return {}
    return {"t": int(passes == 0), **({"n": passes} if passes > 1 else {})}


def journaled(ref: dict[str, Any]) -> int | None:
    """``journal_ref`` read back: the passes (``"n"``, else ``"t"`` — 1: the same pass, 0: a
    later one, taken for one pass in files recorded before ``"n"`` was kept), else None."""
    passes = ref.get("n")
    if type(passes) is int and passes > 1:
        return passes
    same = ref.get("t")
    return None if same is None else (0 if same else 1)


def _running_loop() -> Any:
    asyncio = sys.modules.get("asyncio")  # (a program that never imported it has none)
    if asyncio is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _started(loop: Any, until_a_return: bool = False) -> _Passes | None:
    counting = _Passes(until_a_return)
    try:
        loop.call_soon(_tick, counting, loop)
    except Exception:  # noqa: BLE001 - a closed loop, or one that refuses callbacks
        return None
    return counting


def _tick(counting: _Passes, loop: Any) -> None:
    counting.passes += 1
    if (counting.passes < PASS_LIMIT and not counting.stopped
            and not (counting.until_a_return and loop in _last_return)):
        try:
            loop.call_soon(_tick, counting, loop)
        except Exception:  # noqa: BLE001 - the loop is closing
            pass
