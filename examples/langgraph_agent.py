"""A small LangGraph agent, offline: a scripted chat model, a file tool and an HTTP tool.

    python -m examples.langgraph_agent                  # just run it
    python -m examples.langgraph_agent --out lg.snap    # run it inside snap.record(...)
    python -m examples.langgraph_agent --stream         # the model node streams its reply
    snapstate record -o lg.snap -m examples.langgraph_agent   # or record it unchanged

The graph is the usual ReAct loop — ``agent`` (the model) and ``tools`` (LangGraph's
ToolNode) — and the model is langchain-core's ``GenericFakeChatModel`` playing a script: it
asks for both tools at once (parallel tool calls in one turn), then answers from what they
returned (its turn decided by the conversation, as a real model's would be). The only SnapState line is the ``with snap.record(...)`` under ``--out``: the
LangGraph integration turns model and tool calls into effects and every super-step into a
checkpoint on its own.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Annotated, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from examples import agent_support

QUESTION = "Is this a good week to plant the harbour city's next green roof?"


class CountingModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` playing ``script()`` by the conversation (its turn is the number
    of model replies so far, so a run forked or resumed halfway gets the right reply), and
    counting the calls that really run (``agent_support.count``)."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001
        agent_support.count("model")
        turn = sum(1 for message in messages if message.type == "ai")
        self.messages = iter(script()[turn:turn + 1])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001, ANN201
        """The reply in chunks: both tool calls in one, the answer word by word (the parent
        class streams text only)."""
        reply = self._generate(messages, stop=stop, run_manager=run_manager,
                               **kwargs).generations[0].message
        if reply.tool_calls:
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[
                {"name": call["name"], "args": json.dumps(call["args"]), "id": call["id"],
                 "index": index} for index, call in enumerate(reply.tool_calls)]))
            return
        for piece in re.split(r"(\s)", reply.content):
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))


def script() -> list[AIMessage]:
    """The model's turns: two tool calls at once, then the answer."""
    return [
        AIMessage(content="", tool_calls=[
            {"name": "read_notes", "args": {"name": "harbour.txt"}, "id": "call_notes"},
            {"name": "get_weather", "args": {"city": "harbour city"}, "id": "call_weather"}]),
        AIMessage(content="Yes: 24 C and 3 mm of rain this week, and the notes say planted "
                          "roofs stay 21 C cooler in July. Plant it."),
    ]


@tool
def read_notes(name: str) -> str:
    """Read the field notes file NAME."""
    return agent_support.read_notes(name)


@tool
def get_weather(city: str) -> str:
    """This week's forecast for CITY, from the weather service."""
    return agent_support.get_weather(city)


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


#: The scripted model (module level, so the graph's nodes are plain importable functions).
MODEL = CountingModel(messages=iter(()))


def agent(state: State) -> dict:
    """The model's turn: the conversation so far in, one reply out."""
    reply = MODEL.invoke(state["messages"])
    return {"messages": [reply]}


def streaming_agent(state: State) -> dict:
    """The model's turn, streamed: its chunks added up into the reply."""
    reply = None
    for chunk in MODEL.stream(state["messages"]):
        reply = chunk if reply is None else reply + chunk
    return {"messages": [reply]}


def build_graph(stream: bool = False):  # noqa: ANN201 - a compiled LangGraph graph
    """The ReAct graph: agent -> tools -> agent -> end (``stream``: the model streams)."""
    builder = StateGraph(State)
    builder.add_node("agent", streaming_agent if stream else agent)
    builder.add_node("tools", ToolNode([read_notes, get_weather]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def run_agent(question: str, stream: bool = False) -> str:
    """Ask the agent ``question``; its final answer."""
    agent_support.start_weather_service()
    graph = build_graph(stream)
    result = graph.invoke({"messages": [HumanMessage(question)]})
    return result["messages"][-1].content


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="record the run into this timeline file")
    parser.add_argument("--stream", action="store_true", help="stream the model's replies")
    args = parser.parse_args(argv)
    if args.out:
        import snapstate_capture as snap

        with snap.record(args.out, name="langgraph-agent"):
            answer = run_agent(QUESTION, args.stream)
    else:
        answer = run_agent(QUESTION, args.stream)
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
