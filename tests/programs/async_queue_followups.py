"""Three asyncio workers share one ``asyncio.Queue``; each job's fetch (an effect) may answer
"busy" (the job goes back on the queue) or add two follow-up jobs. While one worker fetches,
the others wait in ``await queue.get()`` — or not yet, as the schedule goes: the queue's
waiting getters are the scheduler's, not the program's.

    python async_queue_followups.py OUT.snap|-

With ``-`` it runs without a ``record`` block (for ``snapstate record``).
"""

import asyncio
import sys

import snapstate_capture as snap


@snap.effect(name="fetch")
async def fetch(job: int, attempt: int):
    await asyncio.sleep(0.004 * (job % 5) + 0.002 * attempt)
    return "busy" if (job % 2 and attempt == 0) else job * 2


async def worker(queue: asyncio.Queue, out: list) -> None:
    while True:
        job, attempt = await queue.get()
        try:
            answer = await fetch(job, attempt)
            if answer == "busy":
                await queue.put((job, attempt + 1))  # again, later
                continue
            out.append(answer)
            if answer < 8:
                await queue.put((answer + 1, 0))
                await queue.put((answer + 2, 0))
        finally:
            queue.task_done()


async def main() -> None:
    queue: asyncio.Queue = asyncio.Queue()
    out: list = []
    queue.put_nowait((0, 0))
    workers = [asyncio.create_task(worker(queue, out)) for _ in range(3)]
    await queue.join()
    for task in workers:
        task.cancel()
    print(sorted(out))


if __name__ == "__main__":
    if sys.argv[1] == "-":
        asyncio.run(main())
    else:
        with snap.record(sys.argv[1]):
            asyncio.run(main())
