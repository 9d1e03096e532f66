"""A tool agent that runs its tool calls on a thread pool; which worker runs which call, and
when each finishes, is timing.

Each round the "model" (an effect) asks for several tool calls; they run on a
``ThreadPoolExecutor`` (each tool an effect that sleeps a random few milliseconds, with a
checkpoint inside the tool: a step made in a worker thread), and the results go back to the
model. The same tool is asked twice with the same arguments in one round.

    python pool_tools.py OUT.snap|- [PLANT]   # PLANT: one lookup result is off by one

With ``-`` it runs without a ``record`` block (for ``snapstate record``).
"""

import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import snapstate_capture as snap

PLANT = sys.argv[2:] == ["PLANT"]


@snap.effect(name="model")
def model(round_number: int, observations: list) -> list[tuple[str, int]]:
    time.sleep(random.uniform(0, 0.005))
    return [("lookup", round_number * 10 + k) for k in range(3)] + [("square", round_number)] * 2


@snap.effect(name="lookup")
def lookup(key: int) -> int:
    time.sleep(random.uniform(0, 0.01))
    return key * 7


@snap.effect(name="square")
def square(value: int) -> int:
    time.sleep(random.uniform(0, 0.01))
    return value * value


def run_tool(call: tuple[str, int]) -> int:
    name, argument = call
    result = lookup(argument) if name == "lookup" else square(argument)
    if PLANT and name == "lookup" and argument == 21:
        result += 1
    snap.checkpoint("tool done", tool=name, argument=argument, result=result)
    return result


def run_calls(calls: list[tuple[str, int]]) -> list[int]:
    """One pool per round, as a tool node makes: its workers pick the calls in any order."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        return list(pool.map(run_tool, calls))


def main() -> list[int]:
    observations: list = []
    for round_number in range(1, 4):
        calls = model(round_number, observations)
        observations = run_calls(calls)
        snap.checkpoint("round", number=round_number, observations=observations)
    return observations


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(main())
    else:
        with snap.record(sys.argv[1], name="pool-tools"):
            print(main())
