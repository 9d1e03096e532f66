"""A LangGraph graph checkpointed by SnapStateSaver inside snap.record, in one timeline file.

    python langgraph_saver_fork.py OUT.snap

``plan`` -> ``draft`` -> ``publish``, one checkpoint per super-step in the file's LangGraph
tables (``thread_id`` ``t1``).
"""

import operator
import sys
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph

import snapstate_capture as snap
from snapstate_capture.integrations.langgraph import SnapStateSaver

PATH = sys.argv[1]


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def node(name):
    def run(state: State) -> dict:
        return {"log": [name]}
    run.__name__ = name
    return run


def build(saver):
    builder = StateGraph(State)
    for name in ("plan", "draft", "publish"):
        builder.add_node(name, node(name))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "draft")
    builder.add_edge("draft", "publish")
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=saver)


with snap.record(PATH, name="saver-fork"):
    saver = SnapStateSaver(PATH)
    graph = build(saver)
    result = graph.invoke({"log": []}, {"configurable": {"thread_id": "t1"}})
    saver.close()
print(result["log"])
