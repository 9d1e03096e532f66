"""A plain program (no snapstate code but an effect) for ``snapstate record --trace lines``:
each real effect call appends to the side file. Usage: traced_agent.py SIDE"""

import random
import sys

import snapstate_capture as snap

SIDE = sys.argv[1]


@snap.effect(name="fetch")
def fetch(n):
    with open(SIDE, "a") as handle:
        handle.write(f"fetch {n}\n")
    return {"n": n, "r": random.random()}


def step(i, total):
    data = fetch(i)
    total += i * 2
    draw = random.randint(0, 100)
    return total + draw + int(data["r"] * 10)


total = 0
for i in range(5):
    total = step(i, total)
print("total", total)
