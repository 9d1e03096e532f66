"""A recorder child for the integrity tests and bench/bench_integrity.py.

Usage: integrity_program.py PATH MODE STEPS [GO_FILE]

MODE is ``checkpoint`` (explicit checkpoints), ``traced`` (line tracing of this file, with a
checkpoint per turn) or ``effect`` (an ``@snap.effect`` call and a checkpoint per turn). After
each turn's checkpoint returns it prints ``step INDEX`` (and, in effect mode, ``effects N``:
journal entries completed so far), flushed: what was printed is complete and must be in the file.
It prints ``closing`` just before the record block ends (the run's end and the file's close
follow). With GO_FILE it prints ``ready`` and waits until that file exists, so concurrent
writers start together. INTEGRITY_PAUSE (seconds, environment) sleeps after each turn.
"""

import os
import sys
import time

import snapstate_capture as snap

path, mode, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if len(sys.argv) > 4:
    print("ready", flush=True)
    while not os.path.exists(sys.argv[4]):
        time.sleep(0.0002)


@snap.effect(name="lookup")
def lookup(n):
    return {"n": n, "answer": n * 7, "prompt": f"PROMPT_{n:04x}"}


def turn(i, state):
    state["items"].append({"i": i, "text": "x" * (i % 40)})
    total = 0
    for k in range(i % 5 + 1):
        total += k
    state["total"] = total
    return state


PAUSE = float(os.environ.get("INTEGRITY_PAUSE", "0"))
state = {"items": [], "total": 0}
trace = {"traced": "lines"}.get(mode)
with snap.record(path, name=f"{mode}-writer", trace=trace, include=[__file__] if trace else ()):
    effects = 0
    for i in range(steps):
        state = turn(i, state)
        if mode == "effect":
            state["last"] = lookup(i)
            effects += 1
        index = snap.checkpoint("turn", i=i)
        print(f"step {index}", flush=True)
        if mode == "effect":
            print(f"effects {effects}", flush=True)
        if PAUSE:
            time.sleep(PAUSE)
    print("closing", flush=True)
