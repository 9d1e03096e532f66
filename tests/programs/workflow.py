"""An importable workflow function recorded with ``@snap.record``: called from another module,
its run's entry is the function and its pickled arguments; run as
``python -m tests.programs.workflow SIDE`` it is a module entry. The timeline is
``$WORKFLOW_SNAP``. Effects append to the side file named in the arguments."""

import os
import sys

import snapstate_capture as snap


@snap.effect(name="search")
def search(side, query):
    with open(side, "a") as handle:
        handle.write(f"search {query}\n")
    return [f"{query}-{n}" for n in range(3)]


@snap.record(os.environ.get("WORKFLOW_SNAP", "workflow.snap"), name="workflow")
def research(side, topics, depth=2):
    notes = {}
    for topic in topics:
        notes[topic] = search(side, topic)[:depth]
        snap.checkpoint("topic", topic=topic)
    return notes


if __name__ == "__main__":
    print(research(sys.argv[1], ["soil", "roofs", "water"], depth=int(sys.argv[2])))
