"""An agent racing its tools: ``asyncio.wait(..., return_when=FIRST_COMPLETED)`` in rounds,
each finished call answered by a new call of the same tool. Each call sleeps a random while
(drawn inside the effect, so the recording keeps the order they came back in); a round takes
what finished before the waiting task woke — two passes of the event loop after the first.

    python async_first_completed.py OUT.snap|-

With ``-`` it runs without a ``record`` block (for ``snapstate record``). Prints each round's
answers.
"""

import asyncio
import random
import sys

import snapstate_capture as snap

TOOLS = ("search", "weather", "maps")


@snap.effect
async def call_tool(tool: str, n: int) -> str:
    await asyncio.sleep(random.random() * 0.03)
    return f"{tool}-{n}"


async def main() -> list[list[str]]:
    calls = {tool: 0 for tool in TOOLS}
    pending = {asyncio.create_task(call_tool(tool, 0), name=tool) for tool in TOOLS}
    rounds = []
    for _ in range(8):
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        finished = sorted(done, key=asyncio.Task.get_name)  # C code: no traced call per task
        answers = [task.result() for task in finished]
        rounds.append(answers)
        snap.checkpoint("round", answers=answers)
        for task in finished:
            tool = task.get_name()
            calls[tool] += 1
            pending.add(asyncio.create_task(call_tool(tool, calls[tool]), name=tool))
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    return rounds


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(asyncio.run(main()))
    else:
        with snap.record(sys.argv[1], name="first-completed"):
            print(asyncio.run(main()))
