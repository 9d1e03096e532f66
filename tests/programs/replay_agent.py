"""A small agent for replay tests: every real effect appends a line to a side file, so a test
can tell whether replay ran an effect. Usage: replay_agent.py SNAP SIDE [ROUNDS] [--slow]

Each round: an LLM-like effect (sync), a tool effect (async), a random draw, a checkpoint;
every third round a flaky effect raises and the error is handled. Prints each completed
checkpoint's step index (the crash test reads them)."""

import asyncio
import random
import sys
import time

import snapstate_capture as snap

SNAP, SIDE = sys.argv[1], sys.argv[2]
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3].isdigit() else 6
SLOW = "--slow" in sys.argv


def side(text):
    with open(SIDE, "a") as handle:
        handle.write(text + "\n")


@snap.effect(name="llm")
def llm(prompt, temperature=0.0):
    side(f"llm {prompt}")
    return {"prompt": prompt, "reply": f"answer-{random.randrange(1000)}"}


@snap.effect(name="tool")
async def tool(query):
    side(f"tool {query}")
    await asyncio.sleep(0)
    return [query.upper(), random.random()]


@snap.effect(name="flaky")
def flaky(n):
    side(f"flaky {n}")
    raise ValueError(f"flaky failure {n}")


@snap.step
def attempt(n):
    note = f"attempt {n}"
    return flaky(n)


def main():
    memory = []
    total = 0
    for i in range(ROUNDS):
        reply = llm(f"question {i}", temperature=0.5)
        found = asyncio.run(tool(f"q{i}"))
        draw = random.randint(0, 10 ** 6)
        total += i * 2
        memory.append({"i": i, "reply": reply["reply"], "draw": draw})
        if i % 3 == 2:
            try:
                attempt(i)
            except ValueError as exc:
                memory.append(str(exc))
        index = snap.checkpoint("round", i=i)
        print(index, flush=True)
        if SLOW:
            time.sleep(0.05)
    return total


with snap.record(SNAP, name="agent"):
    result = main()
    snap.checkpoint("done", result=result)
