"""``replay/effect_turns.py``: served ``async`` effects return in the recorded order."""

from __future__ import annotations

import asyncio

from snapstate_capture.replay.effect_turns import EffectTurns


def test_calls_return_in_the_recorded_order_whatever_order_they_start_in():
    """Three tasks call at once; their effects were recorded returning at steps 9, 4, 7:
    they return 4, 7, 9, each once the ones before it returned."""
    turns = EffectTurns([9, 4, 7], wait=5)
    returned: list[int] = []

    async def call(step: int) -> None:
        await turns.served(step)
        returned.append(step)
        turns.returned(step)

    async def main() -> None:
        await asyncio.gather(call(9), call(4), call(7))

    asyncio.run(main())
    assert returned == [4, 7, 9]


def test_a_call_whose_turn_never_comes_returns_after_the_wait():
    """The effect recorded before it is never called (the program took another path): it
    waits ``wait`` seconds, then returns; after ``open()`` nothing waits at all."""
    turns = EffectTurns([1, 2], wait=0.05)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await turns.served(2)
        return loop.time() - start

    assert 0.04 < asyncio.run(main()) < 2
    turns.open()
    assert asyncio.run(main()) < 0.04


def test_outside_an_asyncio_task_it_does_not_wait():
    """Driven by another scheduler than asyncio's (a bare ``send``), it returns at once."""
    turns = EffectTurns([1, 2], wait=5)
    coroutine = turns.served(2)
    try:
        coroutine.send(None)
    except StopIteration:
        pass
    else:
        raise AssertionError("it waited outside asyncio")


def test_a_stop_holds_back_the_calls_recorded_after_it_until_it_is_reached():
    """A stop at step 5: the call recorded at 8 waits, though every call before it returned,
    until ``unhold`` (the replay made step 5); the one at 3 returns in its turn."""
    turns = EffectTurns([3, 8], wait=5)
    turns.hold(5)
    returned: list[str] = []

    async def call(step: int) -> None:
        await turns.served(step)
        returned.append(f"effect {step}")
        turns.returned(step)

    async def stop() -> None:
        for _ in range(20):
            await asyncio.sleep(0)
        returned.append("stop 5")
        turns.unhold()

    async def main() -> None:
        await asyncio.gather(call(8), call(3), stop())

    asyncio.run(main())
    assert returned == ["effect 3", "stop 5", "effect 8"]


def test_with_a_stop_checkpoints_are_turns_and_calls_due_together_wake_in_order():
    """Before a stop, the checkpoints recorded before it are turns too (``also_order``): the
    calls at 4 and 6 wait for checkpoint 2; once it is made both are released at once, in
    the recorded order, so the call at 6 returns before what the return at 4 woke (a task
    awaiting the first one's task: ``asyncio.as_completed``)."""
    turns = EffectTurns([4, 6], wait=5)
    turns.hold(9)
    turns.also_order([2])
    order: list[str] = []

    async def call(step: int) -> None:
        await turns.served(step)
        order.append(f"effect {step}")
        turns.returned(step)
        asyncio.get_running_loop().call_soon(order.append, f"woken by effect {step}")

    async def checkpoint() -> None:
        for _ in range(5):
            await asyncio.sleep(0)
        order.append("checkpoint 2")
        turns.returned(2)

    async def main() -> None:
        await asyncio.gather(call(6), call(4), checkpoint())
        await asyncio.sleep(0)

    asyncio.run(main())
    assert order == ["checkpoint 2", "effect 4", "effect 6", "woken by effect 4",
                     "woken by effect 6"]


def _order_after_release(passes, wait_first):
    """Task B's served call (step 2) waits for step 1, returned by task A, which then queues
    a follow-up (as a worker's ``queue.put`` wakes another): the order B and the follow-up
    run in. ``wait_first``: B waits on its turn before A returns; else A returns while B's
    first suspension is pending."""
    turns = EffectTurns([1, 2], wait=5.0)
    order = []

    async def b():
        await turns.turn(2, passes)
        order.append("B")

    async def main():
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(b())
        for _ in range(3 if wait_first else 1):
            await asyncio.sleep(0)  # B waits on its turn now, or is in its first suspension
        turns.returned(1)  # A's call returns ...
        loop.call_soon(order.append, "follow-up")  # ... and A's task wakes another
        await task

    asyncio.run(main())
    return order


def test_a_call_that_came_back_in_the_same_pass_resumes_ahead_of_the_follow_ups():
    """``passes`` 0 (``capture/loop_passes.py``): recorded in the same pass of the loop as
    the effect before it, the call's task resumed before what that effect's task woke."""
    assert _order_after_release(0, wait_first=True) == ["B", "follow-up"]
    assert _order_after_release(0, wait_first=False) == ["B", "follow-up"]


def test_a_call_that_came_back_in_a_later_pass_resumes_behind_the_follow_ups():
    """Recorded in a later pass: the worker its predecessor's ``queue.put`` woke ran first
    (and waited again on an empty queue before the next worker came back)."""
    assert _order_after_release(1, wait_first=True) == ["follow-up", "B"]
    assert _order_after_release(1, wait_first=False) == ["follow-up", "B"]


def test_how_many_passes_after_the_previous_an_effect_came_back_is_counted():
    from snapstate_capture.capture.loop_passes import PASS_LIMIT, passes_since_previous

    async def main():
        seen = [passes_since_previous()]  # the first on this loop
        seen.append(passes_since_previous())  # the same pass of the loop
        for waits in (1, 3, 20):
            for _ in range(waits):
                await asyncio.sleep(0)  # this task resumes behind each pass's marker
            seen.append(passes_since_previous())
        return seen

    assert asyncio.run(main()) == [1, 0, 1, 3, PASS_LIMIT]
    assert passes_since_previous() is None  # no running loop


def _passes_until_resumed(passes, wait_first):
    """The passes of the loop between step 1's return and the resumption of the task whose
    served call (step 2) was recorded ``passes`` passes after it."""
    turns = EffectTurns([1, 2], wait=5.0)

    async def main(clock):
        if not wait_first:
            turns.returned(1)
            clock.at["returned"] = clock.ticks
        task = asyncio.ensure_future(clock.served(turns, 2, passes))
        for _ in range(3):
            await asyncio.sleep(0)  # B waits on its turn now
        if wait_first:
            turns.returned(1)
            clock.at["returned"] = clock.ticks
        await task

    at = _Ticking().run(main)
    return at["resumed"] - at["returned"]


class _Ticking:
    """A ticker task counting passes of the loop beside ``main(self)`` (``run``), until a
    call ``served`` through it resumed; ``at``: the ticks at named moments."""

    def __init__(self) -> None:
        self.ticks = 0
        self.at: dict[str, int] = {}

    async def served(self, turns, step, passes):
        self.at["called"] = self.ticks
        await turns.turn(step, passes)
        self.at["resumed"] = self.ticks

    def run(self, main) -> dict[str, int]:
        async def ticker():
            while "resumed" not in self.at:
                self.ticks += 1
                await asyncio.sleep(0)

        async def both():
            counting = asyncio.ensure_future(ticker())
            await asyncio.sleep(0)
            await asyncio.gather(main(self), counting)

        asyncio.run(both())
        return self.at


def test_a_call_that_came_back_passes_later_resumes_as_many_passes_later():
    """``asyncio.wait(..., FIRST_COMPLETED)`` wakes its waiter two passes after the first
    task finished: a call recorded as coming back later must not be done by then (replay
    released every later call one pass behind, and the round took two answers)."""
    found = [_passes_until_resumed(n, wait_first=True) for n in (1, 2, 4, 8)]
    assert found == [2, 3, 5, 9], found  # released n passes on: its task runs in the next
    # its turn came before it was called (its task started late): as many passes on, too,
    # or at the end of its own suspension when that comes later
    found = [_passes_until_resumed(n, wait_first=False) for n in (1, 2, 4, 8)]
    assert found == sorted(found) and found[2] >= 4 and found[3] >= 8, found


def test_the_first_effect_to_come_back_on_a_loop_is_counted_from_its_call():
    """With no effect returned before it, the first one's count was 1 whatever it took: a
    ticker task counting passes read another count at its return on replay (helper-41: 4 of
    4). It is counted from its own call now, and replay releases it as many passes on."""
    from snapstate_capture.capture.loop_passes import (before_call, passes_since_previous,
                                                       suspended)

    async def record():
        mark = before_call()
        for _ in range(3):
            await asyncio.sleep(0)
        return passes_since_previous(mark), suspended(mark)

    assert asyncio.run(record()) == (3, True)

    turns = EffectTurns([1], wait=5.0)
    at = _Ticking().run(lambda clock: clock.served(turns, 1, 3))
    assert at["resumed"] - at["called"] == 3, at
