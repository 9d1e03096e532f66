"""Tool calls in a thread pool, taken as they finish (``concurrent.futures.as_completed``):
the order the answers arrive in decides the report, as in an agent that acts on the first
answers first.

    python pool_as_completed.py OUT.snap|- [slow]   # ``-``: no ``record`` block

``slow``: each call takes ten times its latency, without the random part — long enough that
the program's first checkpoint (whose step a traced run stores before going on: ~0.2 s for the
first; more under load) comes before the second answer.
"""

import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

import snapstate_capture as snap

LATENCY = {"maps": 0.3, "weather": 0.01, "news": 0.2, "stocks": 0.1}


SLOW = sys.argv[2:] == ["slow"]


@snap.effect(name="fetch")
def fetch(source: str) -> str:
    time.sleep(LATENCY[source] * 10 if SLOW else LATENCY[source] * random.uniform(0.5, 1.5))
    return f"{source} ok"


def main() -> list:
    arrived = []
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {pool.submit(fetch, source): source for source in LATENCY}
        for future in as_completed(futures):
            arrived.append(future.result())
            snap.checkpoint("arrived", arrived=arrived)
    return arrived


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(main())
    else:
        with snap.record(sys.argv[1], name="pool-as-completed"):
            print(main())
