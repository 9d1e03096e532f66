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
