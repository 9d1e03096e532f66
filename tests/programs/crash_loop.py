"""A recorder child for crash tests: checkpoints forever, printing each completed step index."""

import sys

import snapstate_capture as snap

path = sys.argv[1]
with snap.record(path, name="crash-loop"):
    state = {"items": [], "counter": 0}
    for i in range(100_000):
        state["items"].append({"i": i, "text": "x" * (i % 50)})
        state["counter"] = i
        index = snap.checkpoint("tick", i=i)
        print(index, flush=True)
