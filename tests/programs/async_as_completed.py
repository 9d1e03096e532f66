"""Tool calls answered as they complete: ``asyncio.as_completed`` over tasks of an effect that
sleeps a fixed while per tool, so the answers come back in another order than they were
asked in; each answer is a checkpoint, in the order it came.

    python async_as_completed.py OUT.snap|- [bare]

With ``-`` it runs without a ``record`` block (for ``snapstate record``). ``bare``: the
coroutines go to ``as_completed`` as they are, which wraps them in tasks itself (in the order
of a set of them: their addresses').
"""

import asyncio
import sys

import snapstate_capture as snap

#: Seconds each tool takes: answers come back weather, maps, search, mail, calendar.
DELAYS = {"search": 0.08, "weather": 0.005, "calendar": 0.16, "mail": 0.12, "maps": 0.04}


@snap.effect
async def ask(tool: str) -> str:
    await asyncio.sleep(DELAYS[tool])
    return f"{tool}: done"


async def main(bare: bool) -> list[str]:
    answers = []
    calls = [ask(tool) if bare else asyncio.create_task(ask(tool)) for tool in DELAYS]
    for finished in asyncio.as_completed(calls):
        answer = await finished
        answers.append(answer)
        snap.checkpoint("answer", answer=answer, position=len(answers))
    return answers


if __name__ == "__main__":
    bare = sys.argv[2:] == ["bare"]
    if sys.argv[1] == "-":
        print(asyncio.run(main(bare)))
    else:
        with snap.record(sys.argv[1], name="as-completed"):
            print(asyncio.run(main(bare)))
