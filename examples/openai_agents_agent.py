"""A small OpenAI Agents SDK agent, offline: scripted models, a file tool, an HTTP tool.

    python -m examples.openai_agents_agent                  # just run it
    python -m examples.openai_agents_agent --out oa.snap    # run it inside snap.record(...)
    python -m examples.openai_agents_agent --stream         # Runner.run_streamed
    snapstate record -o oa.snap --include '*/openai_agents_agent.py' -m examples.openai_agents_agent

A triage agent hands the question off to the roof advisor; the advisor asks for both tools at
once (parallel tool calls in one turn), then answers from what they returned. Both "models"
are ``agents.models.interface.Model`` subclasses playing a script by the conversation. The
only SnapState line is the ``with snap.record(...)`` under ``--out``: the Agents SDK
integration turns model calls and tool calls into effects and every turn and handoff into a
checkpoint on its own. Tracing is off (nothing is exported anywhere).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import (Response, ResponseCompletedEvent, ResponseCreatedEvent,
                                    ResponseFunctionToolCall, ResponseOutputMessage,
                                    ResponseOutputText, ResponseTextDeltaEvent)

from examples import agent_support

QUESTION = "Is this a good week to plant the harbour city's next green roof?"
ANSWER = ("Yes: 24 C and 3 mm of rain this week, and the notes say planted roofs stay 21 C "
          "cooler in July. Plant it.")


def _call(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(type="function_call", name=name, arguments=arguments,
                                    call_id=call_id, id=f"fc_{call_id}", status="completed")


def _seen(items: object, kind: str) -> bool:
    return isinstance(items, list) and any(
        isinstance(item, dict) and item.get("type") == kind for item in items)


class ScriptedModel(Model):
    """A model playing a script by the conversation; counts the calls that really run."""

    def __init__(self, role: str) -> None:
        self.role = role

    def _output(self, input: object) -> list:  # noqa: A002
        agent_support.count("model")
        if self.role == "triage":
            return [_call("transfer_to_roof_advisor", "{}", "call_handoff")]
        if not _seen(input, "function_call_output") or not _seen_tools(input):
            return [_call("read_notes", '{"name": "harbour.txt"}', "call_notes"),
                    _call("get_weather", '{"city": "harbour city"}', "call_weather")]
        return [ResponseOutputMessage(
            id="msg_answer", type="message", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text=ANSWER, annotations=[])])]

    async def get_response(self, system_instructions, input, model_settings, tools,  # noqa: A002
                           output_schema, handoffs, tracing, **kwargs) -> ModelResponse:  # noqa: ANN001
        return ModelResponse(output=self._output(input), usage=Usage(), response_id=None)

    async def stream_response(self, system_instructions, input, model_settings,  # noqa: A002
                              tools, output_schema, handoffs, tracing, **kwargs):  # noqa: ANN001, ANN201
        """The same script as Responses-API stream events: created, the answer's text
        word by word, completed (with the whole response)."""
        output = self._output(input)
        response = Response(id="resp_scripted", created_at=0, model="scripted",
                            object="response", output=output, tool_choice="auto", tools=[],
                            parallel_tool_calls=True)
        yield ResponseCreatedEvent(type="response.created", response=response,
                                   sequence_number=0)
        number = 1
        for item in output:
            if isinstance(item, ResponseOutputMessage):
                for word in item.content[0].text.split(" "):
                    yield ResponseTextDeltaEvent(
                        type="response.output_text.delta", item_id=item.id, output_index=0,
                        content_index=0, delta=word + " ", logprobs=[],
                        sequence_number=number)
                    number += 1
        yield ResponseCompletedEvent(type="response.completed", response=response,
                                     sequence_number=number)


def _seen_tools(items: object) -> bool:
    return isinstance(items, list) and any(
        isinstance(item, dict) and item.get("call_id") == "call_weather"
        and item.get("type") == "function_call_output" for item in items)


@function_tool
def read_notes(name: str) -> str:
    """Read the field notes file NAME."""
    return agent_support.read_notes(name)


@function_tool
def get_weather(city: str) -> str:
    """This week's forecast for CITY, from the weather service."""
    return agent_support.get_weather(city)


set_tracing_disabled(True)
advisor = Agent(name="roof_advisor", instructions="Answer from the notes and the forecast.",
                model=ScriptedModel("advisor"), tools=[read_notes, get_weather])
triage = Agent(name="triage", instructions="Hand roof questions to the roof advisor.",
               model=ScriptedModel("triage"), handoffs=[advisor])


def run_agent(question: str, stream: bool = False) -> str:
    """Ask the agents ``question``; the final answer (``stream``: ``Runner.run_streamed``,
    counting the text deltas it streams)."""
    agent_support.start_weather_service()
    if not stream:
        return str(Runner.run_sync(triage, question).final_output)

    async def streamed() -> str:
        result = Runner.run_streamed(triage, question)
        pieces = 0
        async for event in result.stream_events():
            if event.type == "raw_response_event" and event.data.type.endswith(".delta"):
                pieces += 1
        return f"{result.final_output} ({pieces} streamed pieces)"

    return asyncio.run(streamed())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="record the run into this timeline file")
    parser.add_argument("--stream", action="store_true", help="stream the model's replies")
    args = parser.parse_args(argv)
    if args.out:
        import snapstate_capture as snap

        with snap.record(args.out, name="openai-agents-agent"):
            answer = run_agent(QUESTION, args.stream)
    else:
        answer = run_agent(QUESTION, args.stream)
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
