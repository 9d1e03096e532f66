"""An anyio agent whose effects are cancelled by anyio's own timeouts: a model call under
``anyio.move_on_after`` and a tool call under ``anyio.fail_after``, then a call within its
timeout.

    python anyio_timeouts.py OUT.snap|-   # with ``-``: no ``record`` block (``snapstate record``)
"""

import sys

import anyio

import snapstate_capture as snap


@snap.effect(name="model")
async def model(prompt: str, seconds: float) -> str:
    await anyio.sleep(seconds)
    return f"answer to {prompt}"


async def main() -> list:
    answers = []
    with anyio.move_on_after(0.05) as scope:
        answers.append(await model("slow", 2.0))
    answers.append(f"moved on: {scope.cancelled_caught}")
    try:
        with anyio.fail_after(0.05):
            answers.append(await model("tool", 2.0))
    except TimeoutError:
        answers.append("tool timed out")
    with anyio.fail_after(5):
        answers.append(await model("quick", 0.001))
    snap.checkpoint("answers", answers=answers)
    return answers


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(anyio.run(main))
    else:
        with snap.record(sys.argv[1], name="anyio-timeouts"):
            print(anyio.run(main))
