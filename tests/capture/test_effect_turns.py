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
