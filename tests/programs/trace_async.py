"""Concurrent asyncio tasks, for `snapstate record` tests."""

import asyncio


async def fetch(name, delay):
    await asyncio.sleep(delay)
    value = len(name) * 10
    await asyncio.sleep(delay)
    return value


async def main():
    tasks = [asyncio.create_task(fetch(n, 0.01 * (i + 1)), name=f"fetch-{n}")
             for i, n in enumerate(["ab", "cde", "f"])]
    results = await asyncio.gather(*tasks)
    print("results", results)


asyncio.run(main())
