"""A served call in a pool thread of a traced replay returns where it did among the other
lineages' steps.

An effect's step is written when its call returns, so the steps recorded before it are what
the program did while the call was in flight — in other threads too. Served at once, a thread
pool's calls came back before those steps and in another order, and
``concurrent.futures.as_completed`` (or any consumer of results as they come) took another
answer first than recorded.

Before a served call returns in a thread other than the main one, ``thread_returns`` waits
until the other lineages made every step recorded before its own
(``TracedComparison.waiting_on``; the bodies of the served calls in flight, never run, are not
to be made), at most ``TURN_WAIT`` seconds. A step of the waiting thread itself, which cannot
be made while it waits, ends the wait, as does one not made in time (another path: the
comparison reports it). The untraced replay does the same from its step order, for
``async`` calls too (``EffectServing.await_turn``, ``_after_recorded_steps``). A traced
replay's ``async`` calls keep only their order among themselves (``effect_turns.py``): the
steps the other tasks made are known once written, and asking the writer for them from the
event loop's thread held up every task (a fork's copy of its parent's steps, ~1 s), which
changed the order a live fork recorded.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..clocks import Clocks
from .traced_stop import thread_of

if TYPE_CHECKING:
    from .traced import TracedReplayRecorder

#: Seconds between two looks at the steps written (each look flushes and asks the writer).
LOOK_SECONDS = 0.002


def _waiting_for(recorder: TracedReplayRecorder, call: Any, *, flush: bool) -> Any:
    """The first step recorded before ``call``'s own that another lineage still has to make,
    or None. ``flush``: have every step made so far written first (a round trip to the
    writer); without it, only what is written already is looked at."""
    if flush:
        recorder._stream.request_index()
    with recorder._turn:
        held = set(recorder.waiting_for_live)  # calls in flight when the run died
    return recorder._follower.waiting_on(call.recorded_step - 1, held,
                                         recorder._serving.steps())


def thread_returns(recorder: TracedReplayRecorder, call: Any) -> None:
    """Before served ``call`` returns in a thread other than the main one: wait (module
    docstring). Nothing in the main thread: asyncio's tasks share it."""
    from .serving import TURN_WAIT

    if call.recorded_step is None or threading.current_thread() is threading.main_thread():
        return
    mine = thread_of(recorder.lane())
    deadline = Clocks.monotonic() + TURN_WAIT
    pause = threading.Event()  # never set: a wait that no patch of ``time.sleep`` reaches
    flush = False
    while not recorder.live and Clocks.monotonic() < deadline:
        left = _waiting_for(recorder, call, flush=flush)
        if left is None or thread_of(left.lineage or "") == mine:
            return
        flush = True
        pause.wait(LOOK_SECONDS)
