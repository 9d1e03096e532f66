"""An ``async`` effect whose body awaits nothing (a cache hit) returns without suspending its
task: the task runs on in the same pass of the event loop, ahead of a task an ``Event`` woke
just before. Live, ``seen`` is always ``['p', 'c']``.

    python async_no_suspend.py OUT.snap|-

With ``-`` it runs without a ``record`` block (for ``snapstate record``).
"""

import asyncio
import sys

import snapstate_capture as snap


@snap.effect(name="cached")
async def cached(key: int) -> int:
    return key  # awaits nothing


async def consumer(ready: asyncio.Event, seen: list) -> None:
    await ready.wait()
    seen.append("c")


async def main() -> list:
    ready, seen = asyncio.Event(), []
    task = asyncio.create_task(consumer(ready, seen))
    await cached(0)
    await asyncio.sleep(0)  # a pass of the loop between the two effects
    ready.set()
    await cached(1)  # no suspension: the consumer has not run yet
    seen.append("p")
    await task
    snap.checkpoint("order", seen=seen)
    return seen


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(asyncio.run(main()))
    else:
        with snap.record(sys.argv[1]):
            print(asyncio.run(main()))
