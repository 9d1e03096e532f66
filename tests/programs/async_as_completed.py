"""Tool calls answered as they complete: ``asyncio.as_completed`` over tasks of an effect that
sleeps a fixed while per tool, so the answers come back in another order than they were
asked in; each answer is a checkpoint, in the order it came.

    python async_as_completed.py OUT.snap|-

With ``-`` it runs without a ``record`` block (for ``snapstate record``).
"""

import asyncio
import sys

import snapstate_capture as snap

#: Seconds each tool takes: answers come back weather, maps, search, mail, calendar.
DELAYS = {"search": 0.02, "weather": 0.003, "calendar": 0.03, "mail": 0.025, "maps": 0.01}


@snap.effect
async def ask(tool: str) -> str:
    await asyncio.sleep(DELAYS[tool])
    return f"{tool}: done"


async def main() -> list[str]:
    answers = []
    tasks = [asyncio.create_task(ask(tool)) for tool in DELAYS]
    for finished in asyncio.as_completed(tasks):
        answer = await finished
        answers.append(answer)
        snap.checkpoint("answer", answer=answer, position=len(answers))
    return answers


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(asyncio.run(main()))
    else:
        with snap.record(sys.argv[1], name="as-completed"):
            print(asyncio.run(main()))
