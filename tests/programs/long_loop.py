"""A long run for replay's progress and early stop: ROUNDS rounds, each a call, a checkpoint
and a short sleep, each printing its number.

    python long_loop.py OUT.snap|- ROUNDS    # -: without a record block (for snapstate record)
"""

import sys
import time

import snapstate_capture as snap

def work(i: int) -> int:
    value = i * 2
    return value


def main(rounds: int) -> None:
    total = 0
    for i in range(rounds):
        total += work(i)
        snap.checkpoint("round", i=i, total=total)
        time.sleep(0.002)
        print(i, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "-":
        main(int(sys.argv[2]))
    else:
        with snap.record(sys.argv[1], name="long-loop"):
            main(int(sys.argv[2]))
