"""An asyncio ``TaskGroup`` of tool calls where one tool fails: the group cancels the tasks
still running and the agent reports what it got. A task holds up the event loop (a blocking
call) until every call's timer is due, so they come back in one turn of the loop, the failing
one (the shortest) first: every other call returns before the group's cancellation reaches
its task, and the report has all four answers.

    python taskgroup_failure.py OUT.snap|- [random]   # ``-``: no ``record`` block

``random``: each call sleeps a random while up to 60 ms instead (a schedule of its own at each
recording).
"""

import asyncio
import random
import sys
import time

import snapstate_capture as snap

RANDOM = sys.argv[2:] == ["random"]


@snap.effect(name="fetch")
async def fetch(name: str, seconds: float) -> str:
    await asyncio.sleep(random.uniform(0.0, 0.06) if RANDOM else seconds)
    return f"data {name}"


async def worker(name: str, results: dict) -> None:
    results[name] = await fetch(name, 0.02)


async def failing() -> None:
    await fetch("bad", 0.01)
    raise ValueError("boom")


async def busy() -> None:
    time.sleep(0.05)  # holds up the loop: every call's timer is due when it polls again


async def main() -> list:
    results: dict = {}
    try:
        async with asyncio.TaskGroup() as group:
            for name in ("a", "b", "c", "d"):
                group.create_task(worker(name, results))
            group.create_task(failing())
            group.create_task(busy())
    except* ValueError:
        pass
    report = await fetch("report", 0.001)
    snap.checkpoint("report", results=results, report=report)
    return sorted(results)


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(asyncio.run(main()))
    else:
        with snap.record(sys.argv[1], name="taskgroup-failure"):
            print(asyncio.run(main()))
