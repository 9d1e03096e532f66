"""A line-traced program for run-diff tests: ``python traced_pair.py OUT.snap BUMP``.

Traced steps store small scalars inline in their refs (no preview blob); two runs with
different BUMP differ from the call of ``main`` on, and ``total`` from the fourth loop turn.
"""

import sys
import snapstate_capture as snap


def work(n, bump):
    total = 0
    for i in range(n):
        total += i * i
        if i == 3:
            total += bump
    return total


def main(bump):
    result = work(6, bump)
    return result


if __name__ == "__main__":
    with snap.record(sys.argv[1], trace="lines", include=["*traced_pair.py"]):
        main(int(sys.argv[2]))
