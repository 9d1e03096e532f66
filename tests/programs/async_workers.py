"""An asyncio worker pool: three workers take URLs from one ``asyncio.Queue`` and fetch each
(an effect that sleeps a while before it answers). Which worker takes which URL depends on
which fetch came back first — a recording's schedule that a replay, whose effects answer
from the journal, has to keep for each worker to do what it did.

    python async_workers.py OUT.snap|- [random]

``random``: each fetch sleeps a random few milliseconds (every recording schedules
differently); by default the delays are fixed per URL and come back out of the order the
fetches started in. With ``-`` it runs without a ``record`` block (for ``snapstate record``).
"""

import asyncio
import random
import sys

import snapstate_capture as snap

#: Seconds each URL's fetch takes by default: the second worker's first fetch returns first.
DELAYS = [0.03, 0.005, 0.02, 0.01, 0.025, 0.002, 0.015, 0.008, 0.012, 0.004]


@snap.effect
async def fetch(url: str, jitter: bool) -> str:
    number = int(url.rsplit("/", 1)[1])
    await asyncio.sleep(random.uniform(0.001, 0.02) if jitter else DELAYS[number])
    return f"<html>page {number}</html>"


async def worker(name: str, queue: asyncio.Queue, pages: dict, jitter: bool) -> None:
    while True:
        url = await queue.get()
        try:
            page = await fetch(url, jitter)
            pages[url] = (name, len(page))
            snap.checkpoint("fetched", worker=name, url=url)
        finally:
            queue.task_done()


async def main(jitter: bool) -> dict:
    queue: asyncio.Queue = asyncio.Queue()
    for number in range(len(DELAYS)):
        queue.put_nowait(f"https://example.org/{number}")
    pages: dict = {}
    workers = [asyncio.create_task(worker(f"w{n}", queue, pages, jitter)) for n in range(3)]
    await queue.join()
    for task in workers:
        task.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    return pages


def run(jitter: bool) -> None:
    for url, (name, size) in sorted(asyncio.run(main(jitter)).items()):
        print(url, name, size)


if __name__ == "__main__":
    if sys.argv[1] == "-":
        run(sys.argv[2:] == ["random"])
    else:
        with snap.record(sys.argv[1], name="async-workers"):
            run(sys.argv[2:] == ["random"])
