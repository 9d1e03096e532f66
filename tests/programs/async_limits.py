"""An asyncio agent that limits its concurrent calls with a semaphore and hands a barrier
between workers — primitives whose counts of waiters are the scheduler's: recorded, the calls
take a few milliseconds and the other tasks pile up waiting; replayed, the journal serves
them at once.

    python async_limits.py   # run under ``snapstate record --trace calls``
"""

import asyncio
import random

import snapstate_capture as snap


@snap.effect(name="fetch")
async def fetch(i: int) -> int:
    await asyncio.sleep(random.random() * 0.02)
    return i * i


async def get(i: int, limit: asyncio.Semaphore, ready: asyncio.Event) -> int:
    async with limit:
        value = await fetch(i)
    if i == 2:
        ready.set()
    await ready.wait()
    return value


async def main() -> list[int]:
    limit, ready = asyncio.Semaphore(2), asyncio.Event()
    return await asyncio.gather(*(get(i, limit, ready) for i in range(5)))


if __name__ == "__main__":
    print(asyncio.run(main()))
