"""Served ``async`` effects return in the order the recorded calls returned.

Recorded, an ``async`` effect suspends its task until the result arrives, and the other tasks
run meanwhile; which call comes back first decides what each task does next — which URL a
worker takes from a shared ``asyncio.Queue``, which answer ``asyncio.as_completed`` yields
first. On replay the journal has every result at hand: a served call that returned at once
would let the first task to call run on and take the next item from the queue, and from there
each task's steps differ from the recording (a divergence that timing alone caused).

``EffectTurns`` gives a served ``async`` effect back the two things that decided the recorded
schedule: it suspends once, as the real call did, and it returns only when every effect whose
step was recorded before its own has returned in this replay. An effect's step is written when
its call returns, so the recorded steps' order is the order the calls completed in. The task
whose call returns runs on until it suspends again; the next task's call returns ahead of
what that task woke meanwhile when the recorded calls came back in the same pass of the event
loop, else behind it, as many passes of the loop later as the recorded call came back (the
release goes through the loop's queue that many times), as the journal says
(``capture/loop_passes.py``; files recorded before it was kept: one pass behind; before the
passes were counted, past the first: one pass).

A stop or fork at step N not reached yet (``hold``) holds back the calls recorded as returning
after it, whatever returned before them: recorded, they came back after step N, which the
replay must make before any of them for the run to be at step N when it stops there.

A call whose turn does not come within ``wait`` seconds — the program took another path, which
the step comparison reports as a divergence — returns anyway. After ``open()`` (the replay went
live) nothing waits.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..capture import loop_passes

if TYPE_CHECKING:  # imported where a call waits: a replay child must not import asyncio
    import asyncio  # before the program does (a program traced into it replays its import)


class EffectTurns:
    """The recorded return order of a run's effects, and which have returned on replay.

    ``steps``: the recorded step of each journal entry (None for an entry without one: it
    takes part in no order); ``wait``: the most seconds a call waits for its turn.
    Thread-safe: effects return in any thread; waiters are released on their own loop.
    """

    def __init__(self, steps: Iterable[int | None], wait: float) -> None:
        self._order = sorted(step for step in steps if step is not None)
        self._returned: set[int] = set()
        self._low = 0  # position in ``_order`` of the first effect step not returned yet
        self._waiting: list[tuple[int, asyncio.Future[None], int | None]] = []
        self._lock = threading.Lock()
        self._open = False
        self._hold: int | None = None
        self.wait = wait
        #: The passes of the event loop since the last served call returned on it
        #: (``loop_passes.count_from_here``; None: not in an event loop).
        self._since: Any = None

    def also_order(self, steps: Iterable[int]) -> None:
        """Order the served calls after these recorded steps too (checkpoints before a stop:
        the replay reports each made with ``returned``). Before any call returned."""
        with self._lock:
            self._order = sorted({*self._order, *steps})

    def keep_only(self, steps: Iterable[int]) -> None:
        """The replay went live: only the served calls still in flight (recorded at
        ``steps``) keep their recorded order, among themselves; nothing else waits."""
        with self._lock:
            self._order = sorted(set(steps) - self._returned)
            self._returned, self._low, self._hold = set(), 0, None
            due = self._take_due()
        for _, future, _ in due:
            _release(future)

    def hold(self, index: int) -> None:
        """Hold back the calls recorded after step ``index`` (a stop there, not reached yet)
        until ``unhold``."""
        with self._lock:
            self._hold = index

    def unhold(self) -> None:
        """The stop was reached: the held calls return in their turn."""
        with self._lock:
            self._hold = None
            due = self._take_due()
        for _, future, _ in due:
            _release(future)

    def returned(self, step: int | None) -> None:
        """The effect recorded at ``step`` returned in this replay (served, or run live):
        release the calls whose turn that makes, in their recorded order."""
        if step is None:
            return
        with self._lock:
            self._since = loop_passes.count_from_here(self._since)
            self._returned.add(step)
            while self._low < len(self._order) and self._order[self._low] in self._returned:
                self._low += 1
            due = self._take_due()
            alone = len(due) == 1 and self._hold is None  # (a batch wakes in its order)
        for _, future, passes in due:
            _release(future, passes if alone else None)

    def _take_due(self) -> list[tuple[int, asyncio.Future[None], int | None]]:
        """The waiting calls whose turn it is, in their recorded order, taken off the waiting
        list (lock held). While a stop holds calls back (``hold``), so are those whose every
        earlier step not returned yet is a call released with them: their tasks wake in the
        recorded order, each returning before the next, ahead of any task woken meanwhile for
        another reason (a task another one's return finished), as when recorded."""
        due: list[tuple[int, asyncio.Future[None], int | None]] = []
        batch: set[int] = set()
        for entry in sorted(self._waiting, key=lambda entry: entry[0]):
            if self._due(entry[0]) or (self._hold is not None
                                       and self._due_with(entry[0], batch)):
                due.append(entry)
                batch.add(entry[0])
        for entry in due:
            self._waiting.remove(entry)
        return due

    def _due_with(self, step: int, batch: set[int]) -> bool:
        """Whether every step ordered before ``step`` returned or is in ``batch`` and
        ``step`` is not held back (lock held)."""
        if self._hold is not None and step > self._hold:
            return False
        for earlier in self._order[self._low:]:
            if earlier >= step:
                return True
            if earlier not in self._returned and earlier not in batch:
                return False
        return True

    def open(self) -> None:
        """Stop ordering (the replay went live): every waiting call returns now."""
        with self._lock:
            self._open = True
            waiting, self._waiting = self._waiting, []
        for _, future, _ in sorted(waiting, key=lambda entry: entry[0]):
            _release(future)

    async def served(self, step: int | None, passes: int | None = None,
                     suspended: bool | None = None) -> None:
        """``turn(step, passes, suspended)`` for a served call in an asyncio task; nothing
        under another event loop (trio's scheduler is not asyncio's to order). Never
        raises."""
        import asyncio

        try:
            if asyncio.current_task() is None:
                return
        except RuntimeError:  # no running asyncio loop
            return
        try:
            await self.turn(step, passes, suspended)
        except Exception:  # noqa: BLE001 - ordering is best effort; the comparison decides
            pass

    async def turn(self, step: int | None, passes: int | None = None,
                   suspended: bool | None = None) -> None:
        """Suspend once, then until every effect recorded before ``step`` has returned (at
        most ``wait`` seconds). ``step`` None (no recorded step): only the suspension.

        ``passes`` (``capture/loop_passes.py``; None in files recorded before it was kept):
        the passes of the event loop between the return of the effect before it and the
        recorded call's. 0: the same pass — its task then resumed ahead of what that effect's
        task woke next, so it is released at once, from that task's return. More: it resumes
        behind those, that many passes of the loop later (a worker woken into an empty queue
        waited again before the next worker did, which decides who takes the next job; a
        task woken through a future — ``asyncio.wait`` — ran before a call that came back
        later). ``suspended`` False: the recorded call returned without suspending its task
        (a cache hit awaiting nothing): when its turn has come, it returns so too.
        """
        import asyncio

        same_pass = None if passes is None else passes == 0
        due_already = True
        if step is not None and (suspended is False or same_pass is False):
            with self._lock:
                due_already = self._open or self._due(step)
            if due_already and suspended is False:
                return  # as the recorded call did: its task ran on
        await asyncio.sleep(0)  # the recorded call suspended its task: the others ran
        if step is None:
            return
        with self._lock:
            due = self._open or self._due(step)
            # (while a stop holds calls back, they wake in batches, in their order)
            due_already = due_already or self._hold is not None
            if not due:
                future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                entry = (step, future, passes)
                self._waiting.append(entry)
        if due:
            if not due_already:  # made due while this task was suspended: behind it
                await asyncio.sleep(0)
            if passes:  # as many passes after the call before it as recorded
                since = self._since
                if since is None:  # the first to come back: as many passes after its call
                    for _ in range(min(passes, loop_passes.PASS_LIMIT) - 1):
                        await asyncio.sleep(0)
                while since is not None and since is self._since and since.passes < passes:
                    await asyncio.sleep(0)
            return
        # awaited directly, woken by the release alone (``wait_for`` and ``shield`` would add
        # turns of the loop, in which a task released later could run first); after ``wait``
        # seconds it returns anyway: another path than the recording's, which the step
        # comparison reports
        timeout = future.get_loop().call_later(self.wait, _resolve, future)
        try:
            await future
        finally:
            timeout.cancel()
            with self._lock:
                if entry in self._waiting:
                    self._waiting.remove(entry)

    def _due(self, step: int) -> bool:
        """Whether every effect step recorded before ``step`` has returned and ``step`` is not
        held back (lock held)."""
        if self._hold is not None and step > self._hold:
            return False
        return self._low >= len(self._order) or self._order[self._low] >= step


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _release(future: asyncio.Future[None], passes: int | None = None) -> None:
    """Resolve ``future`` on its own loop: behind what that loop has queued already — after
    ``passes`` passes of it (None: one) — or, ``passes`` 0 and called from that loop's own
    thread, now, so that its task resumes ahead of what the caller's task queues next
    (``EffectTurns.turn``)."""
    try:
        loop = future.get_loop()
        if passes == 0 and _running_here(loop):
            _resolve(future)
        else:
            loop.call_soon_threadsafe(_after_passes, future, passes or 1)
    except RuntimeError:  # its loop is closed: nobody waits any more
        pass


def _after_passes(future: asyncio.Future[None], passes: int) -> None:
    """Resolve ``future`` in ``passes - 1`` more passes of its loop (now when 1)."""
    if passes <= 1:
        _resolve(future)
        return
    try:
        future.get_loop().call_soon(_after_passes, future, passes - 1)
    except RuntimeError:  # its loop is closed
        pass


def _running_here(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is the event loop running in this thread."""
    import asyncio

    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
