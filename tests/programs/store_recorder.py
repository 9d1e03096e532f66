"""A recorder child for the shared-store tests: an agent-like loop of ``STEPS`` checkpoints into
``LOCATION`` (a ``postgresql://`` URL), pausing ``PAUSE`` seconds between steps; prints each
completed step index."""

import sys
import time

import snapstate_capture as snap

location, steps, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with snap.record(location, name=sys.argv[4] if len(sys.argv) > 4 else "store-recorder"):
    memory = {"messages": [], "turn": 0}
    for turn in range(steps):
        memory["messages"] = memory["messages"][-9:] + [{"role": "user", "content": f"q {turn}"}]
        memory["turn"] = turn
        index = snap.checkpoint("turn", turn=turn)
        print(index, flush=True)
        if pause:
            time.sleep(pause)
print("done", flush=True)
