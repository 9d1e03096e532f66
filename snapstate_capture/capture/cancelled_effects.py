"""``async`` effects cancelled from outside: by a timeout, or by another task's ``cancel()``.

A call cancelled while recording ends in ``CancelledError``, which the journal keeps as its
outcome. Served as such on replay — raised at once — it was a different program: the
cancellation had not come yet, so ``asyncio.wait_for`` and ``asyncio.timeout`` passed the
error on instead of turning it into ``TimeoutError``, and ``task.cancel()`` found the task
already done and returned False. The cancellation is the program's own doing (its timer, its
other task), and it comes again on replay: a served call that was cancelled waits for it
(``served``) and then ends as the recorded one did, in the program's own
``CancelledError``.

Recording notes how long the call ran before it was cancelled (``cancelled_after``, seconds,
kept in the journal row's value ref as ``"c"``); replay waits at most twice that plus
``GRACE`` seconds — ``TURN_WAIT`` for a file recorded before this was kept — and then raises
the recorded error, so a replay that went another way does not hang (its divergence shows
where it went).
"""

from __future__ import annotations

import sys
from typing import Any

from ..clocks import Clocks
from ..options import seconds_from_env

#: Seconds a served cancelled call waits beyond twice the recorded time to its cancellation.
GRACE = 5.0


def is_cancellation(value: Any) -> bool:
    """True for an ``asyncio.CancelledError`` (imported only when asyncio already is)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(value, asyncio.CancelledError)


def started() -> float:
    """The monotonic time a call starts at, for ``note``."""
    return Clocks.monotonic()


def note(call: Any, since: float) -> None:
    """``call`` (recording) ended in ``CancelledError``: keep how long it ran (seconds)."""
    if call.outcome == "raise" and is_cancellation(call.value):
        call.cancelled_after = round(Clocks.monotonic() - since, 6)


async def served(call: Any, wait: Any) -> None:
    """A served ``async`` call, before it returns: ``await wait(call)`` (its turn:
    ``replay/effect_turns.py``; None: no turn to wait for) and, for a call recorded as
    cancelled (``call.cancelled_after`` seconds in, or unknown), suspend until the program
    cancels it again — in its turn or after — and take the program's ``CancelledError`` as
    the outcome (``end_call`` raises it, so ``wait_for`` sees its own cancellation). Not
    cancelled in time (module docstring): the recorded error stays the outcome."""
    if not (call.served and call.outcome == "raise" and is_cancellation(call.value)):
        if wait is not None:
            await wait(call)
        return
    import asyncio

    try:
        if wait is not None:
            await wait(call)
        await _until_cancelled(call.cancelled_after)
    except asyncio.CancelledError as exc:
        call.value = exc  # the program's own cancellation, as when recorded


async def _until_cancelled(recorded: Any) -> None:
    """Suspend until cancelled (raising ``CancelledError``), or return after the bound."""
    import asyncio

    if isinstance(recorded, (int, float)) and recorded >= 0:
        bound = 2 * recorded + GRACE
    else:
        bound = seconds_from_env("SNAPSTATE_TURN_WAIT", 10.0)  # as replay's TURN_WAIT
    loop = asyncio.get_running_loop()
    waiter = loop.create_future()
    timer = loop.call_later(bound, lambda: waiter.done() or waiter.set_result(None))
    try:
        await waiter
    finally:
        timer.cancel()
