"""A pydantic-ai agent whose model (a ``FunctionModel`` that takes the time its prompt names)
is cut off by the program's deadlines: anyio's ``move_on_after``, ``asyncio.wait_for`` and a
cancel scope another task cancels; then a call within its time.

    python pydantic_ai_timeouts.py OUT.snap|-   # ``-``: no ``record`` block
"""

import asyncio
import sys

import anyio
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import snapstate_capture as snap


async def timed_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = messages[-1].parts[-1].content
    await asyncio.sleep(float(prompt.split()[-1]))
    return ModelResponse(parts=[TextPart(f"answer to {prompt}")])


agent = Agent(FunctionModel(timed_model))


async def main() -> list:
    notes = []
    with anyio.move_on_after(0.3) as scope:
        notes.append((await agent.run("slow 3.0")).output)
    notes.append(f"moved on {scope.cancelled_caught}")
    try:
        notes.append((await asyncio.wait_for(agent.run("slower 3.0"), 0.3)).output)
    except TimeoutError:
        notes.append("wait_for timed out")
    async with anyio.create_task_group() as group:
        with anyio.CancelScope() as cancelled:
            async def cancel_soon() -> None:
                await anyio.sleep(0.3)
                cancelled.cancel()
            group.start_soon(cancel_soon)
            notes.append((await agent.run("slowest 3.0")).output)
    notes.append(f"cancelled {cancelled.cancelled_caught}")
    notes.append((await agent.run("quick 0.01")).output)
    snap.checkpoint("notes", notes=notes)
    return notes


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(anyio.run(main))
    else:
        with snap.record(sys.argv[1], name="pydantic-ai-timeouts"):
            print(anyio.run(main))
