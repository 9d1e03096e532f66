"""An asyncio agent whose effects are cancelled from outside: a model call under
``asyncio.wait_for`` that times out, a tool call under ``asyncio.timeout`` that times out, a
task another task cancels, and a call that finishes within its timeout.

    python async_timeouts.py OUT.snap|-   # with ``-``: no ``record`` block (``snapstate record``)
"""

import asyncio
import sys

import snapstate_capture as snap


@snap.effect(name="model")
async def model(prompt: str, seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"answer to {prompt}"


async def ask(prompt: str, seconds: float, timeout: float) -> str:
    try:
        return await asyncio.wait_for(model(prompt, seconds), timeout=timeout)
    except TimeoutError:
        return "timed out"


async def tool(seconds: float) -> str:
    try:
        async with asyncio.timeout(0.05):
            return await model("tool", seconds)
    except TimeoutError:
        return "tool timed out"


async def main() -> list:
    answers = [await ask("slow", 2.0, 0.05), await ask("quick", 0.001, 5.0), await tool(2.0)]
    background = asyncio.create_task(model("background", 2.0))
    await asyncio.sleep(0.02)
    answers.append(f"cancel() returned {background.cancel()}")
    try:
        answers.append(await background)
    except asyncio.CancelledError:
        answers.append("cancelled")
    snap.checkpoint("answers", answers=answers)
    return answers


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(asyncio.run(main()))
    else:
        with snap.record(sys.argv[1], name="async-timeouts"):
            print(asyncio.run(main()))
