"""A plain program for ``snapstate record`` that can be killed while an effect is in flight:
each real ``fetch`` appends ``fetch N`` to the side file; while the file SIDE.slow exists,
fetch 3 sleeps 60 s after noting itself (the test SIGKILLs it then; a file, not an environment
variable or an argument, so the resumed program is the recorded one and does not sleep).
Usage: traced_crash_agent.py SIDE"""

import os
import sys
import time

import snapstate_capture as snap

SIDE = sys.argv[1]


@snap.effect(name="fetch")
def fetch(n):
    with open(SIDE, "a") as handle:
        handle.write(f"fetch {n}\n")
    if n == 3 and os.path.exists(SIDE + ".slow"):
        time.sleep(60)
    return {"n": n, "r": n * 37 % 10 / 10}  # what a service answered


def step(i, total):
    data = fetch(i)
    total += i * 2
    return total + int(data["r"] * 10)


total = 0
for i in range(5):
    total = step(i, total)
print("total", total)
