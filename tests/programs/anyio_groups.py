"""anyio task groups of tool calls with random latencies: under a deadline
(``anyio.move_on_after``) that cancels the calls still running, or with one tool failing,
which cancels the others. anyio cancels a task in a cancelled scope again at each of its
suspensions until it leaves the scope.

    python anyio_groups.py OUT.snap|- deadline|failing   # ``-``: no ``record`` block
"""

import random
import sys

import anyio

import snapstate_capture as snap


@snap.effect(name="fetch")
async def fetch(name: str) -> str:
    await anyio.sleep(random.uniform(0.0, 0.6))
    return f"data {name}"


async def worker(name: str, results: dict) -> None:
    results[name] = await fetch(name)


async def failing() -> None:
    await fetch("bad")
    raise ValueError("boom")


async def deadline() -> list:
    results: dict = {}
    with anyio.move_on_after(0.3) as scope:
        async with anyio.create_task_group() as group:
            for name in "abcd":
                group.start_soon(worker, name, results)
    snap.checkpoint("results", results=results, moved_on=scope.cancelled_caught)
    return sorted(results)


async def failing_group() -> list:
    results: dict = {}
    try:
        async with anyio.create_task_group() as group:
            for name in "abcd":
                group.start_soon(worker, name, results)
            group.start_soon(failing)
    except* ValueError:
        pass
    snap.checkpoint("results", results=results)
    return sorted(results)


def main() -> list:
    return anyio.run(deadline if sys.argv[2] == "deadline" else failing_group)


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(main())
    else:
        with snap.record(sys.argv[1], name="anyio-groups"):
            print(main())
