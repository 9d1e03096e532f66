"""A small pydantic-ai agent, offline: a ``FunctionModel``, a file tool and an HTTP tool.

    python -m examples.pydantic_ai_agent                  # just run it
    python -m examples.pydantic_ai_agent --out pa.snap    # run it inside snap.record(...)
    snapstate record -o pa.snap --include '*/pydantic_ai_agent.py' -m examples.pydantic_ai_agent

The model is pydantic-ai's ``FunctionModel`` playing a script by the conversation: with no
tool result yet it asks for both tools at once (parallel tool calls in one turn), then it
answers from what they returned. The only SnapState line is the ``with snap.record(...)``
under ``--out``: the pydantic-ai integration turns model requests and tool calls into effects
and every graph node into a checkpoint on its own.
"""

from __future__ import annotations

import argparse
import sys

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from examples import agent_support

QUESTION = "Is this a good week to plant the harbour city's next green roof?"


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: both tools first, then the answer (decided by the conversation)."""
    agent_support.count("model")
    answered = any(getattr(part, "part_kind", "") == "tool-return"
                   for message in messages for part in message.parts)
    if not answered:
        return ModelResponse(parts=[
            ToolCallPart("read_notes", {"name": "harbour.txt"}, tool_call_id="call_notes"),
            ToolCallPart("get_weather", {"city": "harbour city"}, tool_call_id="call_weather")])
    return ModelResponse(parts=[TextPart(
        "Yes: 24 C and 3 mm of rain this week, and the notes say planted roofs stay 21 C "
        "cooler in July. Plant it.")])


agent = Agent(FunctionModel(scripted_model), name="roof-advisor",
              instructions="Answer from the field notes and the forecast.")


@agent.tool_plain
def read_notes(name: str) -> str:
    """Read the field notes file NAME."""
    return agent_support.read_notes(name)


@agent.tool_plain
def get_weather(city: str) -> str:
    """This week's forecast for CITY, from the weather service."""
    return agent_support.get_weather(city)


def run_agent(question: str) -> str:
    """Ask the agent ``question``; its final answer."""
    agent_support.start_weather_service()
    result = agent.run_sync(question)
    return result.output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="record the run into this timeline file")
    args = parser.parse_args(argv)
    if args.out:
        import snapstate_capture as snap

        with snap.record(args.out, name="pydantic-ai-agent"):
            answer = run_agent(QUESTION)
    else:
        answer = run_agent(QUESTION)
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
