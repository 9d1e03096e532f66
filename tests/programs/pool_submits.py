"""Effects handed to a thread pool themselves — no frame of the program's own runs on the
worker thread — while the code that submitted them goes on.

Each call is sited where it was submitted (``effects.sited_at``). Recorded, a call takes 0.1 s
and the submitting loop is lines further on when it returns; replayed, the journal serves it at
once. Which of the pool's workers ran which call, and how many workers the pool started (three
recorded, fewer replayed: an idle worker takes the next call), is timing too.

    python pool_submits.py OUT.snap|-   # with ``-``: no ``record`` block (``snapstate record``)
"""

import sys
import time
from concurrent.futures import ThreadPoolExecutor

import snapstate_capture as snap


@snap.effect(name="slow")
def slow(k: int) -> int:
    time.sleep(0.1)  # the worker stays busy: the next submit starts another worker
    return k * 2


def main() -> int:
    total = 0
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = []
        for k in range(3):
            futures.append(pool.submit(slow, k))
            time.sleep(0.02)  # the submitting loop goes on while the calls run
        for doubled in pool.map(slow, range(3, 6)):
            total += doubled
            time.sleep(0.02)
        total += sum(future.result() for future in futures)
    snap.checkpoint("done", total=total)
    return total


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(main())
    else:
        with snap.record(sys.argv[1], name="pool-submits"):
            print(main())
