"""A small pydantic-ai agent, offline: a ``FunctionModel``, a file tool and an HTTP tool.

    python -m examples.pydantic_ai_agent                  # just run it
    python -m examples.pydantic_ai_agent --out pa.snap    # run it inside snap.record(...)
    python -m examples.pydantic_ai_agent --stream         # the model streams its replies
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
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

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


async def scripted_stream(messages: list[ModelMessage], info: AgentInfo):  # noqa: ANN201
    """The same script, streamed: both tool calls in one chunk, the answer word by word."""
    reply = scripted_model(messages, info)
    calls = [part for part in reply.parts if isinstance(part, ToolCallPart)]
    if calls:
        yield {index: DeltaToolCall(call.tool_name, call.args_as_json_str(),
                                    tool_call_id=call.tool_call_id)
               for index, call in enumerate(calls)}
        return
    for word in reply.text.split(" "):
        yield word + " "


agent = Agent(FunctionModel(scripted_model, stream_function=scripted_stream),
              name="roof-advisor",
              instructions="Answer from the field notes and the forecast.")


@agent.tool_plain
def read_notes(name: str) -> str:
    """Read the field notes file NAME."""
    return agent_support.read_notes(name)


@agent.tool_plain
def get_weather(city: str) -> str:
    """This week's forecast for CITY, from the weather service."""
    return agent_support.get_weather(city)


def run_agent(question: str, stream: bool = False) -> str:
    """Ask the agent ``question``; its final answer (``stream``: the model's replies are
    streamed to an event handler counting the text pieces)."""
    agent_support.start_weather_service()
    if not stream:
        return agent.run_sync(question).output
    pieces = []

    async def on_events(ctx, events) -> None:  # noqa: ANN001
        async for event in events:
            if getattr(getattr(event, "delta", None), "part_delta_kind", "") == "text":
                pieces.append(event.delta.content_delta)

    result = agent.run_sync(question, event_stream_handler=on_events)
    return f"{result.output.strip()} ({len(pieces)} streamed pieces)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="record the run into this timeline file")
    parser.add_argument("--stream", action="store_true", help="stream the model's replies")
    args = parser.parse_args(argv)
    if args.out:
        import snapstate_capture as snap

        with snap.record(args.out, name="pydantic-ai-agent"):
            answer = run_agent(QUESTION, args.stream)
    else:
        answer = run_agent(QUESTION, args.stream)
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
