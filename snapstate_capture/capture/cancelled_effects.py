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

A cancellation that comes while a served call waits for its turn is the replay's scheduling,
not the program's (the recorded call reached its turn before any cancellation did): the call
waits on for its turn, then ends as recorded and the cancellation is requested again for the
task's next suspension (``in_turn``; a ``TaskGroup`` whose failing task returned first).
"""

from __future__ import annotations

import sys
from typing import Any

from ..clocks import Clocks
from ..options import seconds_from_env

#: Seconds a served cancelled call waits beyond twice the recorded time to its cancellation.
GRACE = 5.0
#: Times a served call waits for its turn when cancelled meanwhile (``in_turn``): asyncio
#: cancels once (a ``TaskGroup``), anyio at every suspension while its scope is cancelled.
TURN_TRIES = 2


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
    cancelled in time (module docstring): the recorded error stays the outcome. A
    cancellation that comes before the call's turn does not cut the turn short (``in_turn``)."""
    if not (call.served and call.outcome == "raise" and is_cancellation(call.value)):
        if wait is not None:
            await in_turn(call, wait)
        return
    import asyncio

    if wait is not None:
        recorded = call.value
        await in_turn(call, wait)
        if call.value is not recorded:
            return  # cancelled while it waited for its turn: it ends so, in its turn
    try:
        await _until_cancelled(call.cancelled_after)
    except asyncio.CancelledError as exc:
        call.value = exc  # the program's own cancellation, as when recorded


async def in_turn(call: Any, wait: Any) -> None:
    """``await wait(call)`` (a served ``async`` call's turn), which no cancellation of the
    task cuts short: the call returns in its recorded order whatever comes meanwhile.

    A cancellation that comes while a call waits for its turn is the replay's scheduling,
    not the program's: effects recorded as returning in one turn of the event loop (their
    timers due together) return here one after another, each released by the one before,
    and what another task's return set off meanwhile — a ``TaskGroup`` cancelling its tasks
    when one of them failed — ran after all of them when recorded; a call cut short there
    never returned, and every call ordered after it waited ``TURN_WAIT`` s for its turn.
    So the call waits on for its turn, once (``TURN_TRIES``): anyio cancels a task in a
    cancelled scope again at each of its suspensions until it leaves the scope, and a call
    that waited on after each would never return (helper-35: the replay spun at 100% CPU);
    cancelled again, it stops waiting. One recorded as returning (or raising another error)
    then returns so, and the cancellation is requested again (``_cancel_again``): it reaches
    the task at its next suspension, as when recorded. One recorded as cancelled takes the
    program's ``CancelledError`` as its outcome (``call.value``)."""
    import asyncio

    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    if task is None:
        await wait(call)
        return
    cancelled: BaseException | None = None
    for _ in range(TURN_TRIES):
        try:
            await wait(call)
            break
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc  # the first: what the recorded call met
    if cancelled is None:
        return
    if call.outcome == "raise" and is_cancellation(call.value):
        call.value = cancelled  # the program's own cancellation, as when recorded
    else:
        _cancel_again(task, cancelled)


def _cancel_again(task: Any, exc: BaseException) -> None:
    """Request ``task``'s cancellation again (it is running: the request is delivered at its
    next suspension), keeping how many cancellations it has pending (``Task.cancelling``,
    which ``asyncio.timeout`` and ``TaskGroup`` count) as it was."""
    message = exc.args[0] if exc.args else None
    uncancel = getattr(task, "uncancel", None)  # Python 3.11+
    if uncancel is not None:
        uncancel()
    task.cancel(message)


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
