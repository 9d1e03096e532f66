"""A LangGraph graph whose approval node waits with ``snap.wait_for``, its checkpoints kept by
``SnapStateSaver`` in the recorded file: the wait ends the process while LangGraph's pool may
still be storing the checkpoint before it (a call in flight in another thread).

    python langgraph_wait.py FILE LEDGER

Exits 75 at the wait; ``snapstate resume FILE --answer yes`` publishes. Each effect's body
appends a line to LEDGER.
"""

import sys
from typing import TypedDict

from langgraph.graph import END, START, StateGraph

import snapstate_capture as snap
from snapstate_capture.integrations.langgraph import SnapStateSaver

PATH, LEDGER = sys.argv[1], sys.argv[2]


class Post(TypedDict):
    draft: str
    verdict: str
    published: int


def note(text):
    with open(LEDGER, "a", encoding="utf-8") as ledger:
        ledger.write(text + "\n")


@snap.effect(name="write")
def write(topic):
    note("write")
    return f"draft about {topic}"


@snap.effect(name="publish")
def publish_post(text):
    note("publish")
    return 1


def draft(state):
    return {"draft": write("roofs")}


def approve(state):
    return {"verdict": snap.wait_for("approve", prompt="publish?",
                                     schema={"enum": ["yes", "no"]})}


def publish(state):
    return {"published": publish_post(state["draft"]) if state["verdict"] == "yes" else 0}


def main():
    graph = StateGraph(Post)
    for name, node in (("draft", draft), ("approve", approve), ("publish", publish)):
        graph.add_node(name, node)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "approve")
    graph.add_edge("approve", "publish")
    graph.add_edge("publish", END)
    app = graph.compile(checkpointer=SnapStateSaver(PATH))
    with snap.record(PATH, name="langgraph-wait"):
        out = app.invoke({"draft": "", "verdict": "", "published": 0},
                         {"configurable": {"thread_id": "t1"}})
    print("published", out["published"])


if __name__ == "__main__":
    main()
