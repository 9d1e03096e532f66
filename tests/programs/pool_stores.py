"""Pool workers that fetch (an effect taking a random few milliseconds) and then store what
they fetched into one shared dict: which stores were done by a given step is timing.

    python pool_stores.py   # run under ``snapstate record``
"""

import random
import time
from concurrent.futures import ThreadPoolExecutor

import snapstate_capture as snap

STORED: dict[int, int] = {}


@snap.effect(name="fetch")
def fetch(k: int) -> int:
    time.sleep(random.random() * 0.02)
    return k * 7


def store(k: int, value: int) -> None:
    STORED[k] = value


def work(k: int) -> int:
    value = fetch(k)
    store(k, value)
    return value


def main() -> list[int]:
    with ThreadPoolExecutor(max_workers=3) as pool:
        return list(pool.map(work, range(8)))


if __name__ == "__main__":
    print(main(), sorted(STORED))
