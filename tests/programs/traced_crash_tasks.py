"""Three asyncio tasks under ``snapstate record``, killed while one is inside an effect:
``notes`` (an effect run as a task of its own), ``tally`` and ``weather``. While SIDE.slow
exists (the recording), ``weather`` waits 0.5 s before it calls the effect ``forecast``, which
notes itself in the side file and then sleeps 60 s (the test SIGKILLs it there), and ``notes``
takes 0.1 s: the recording has ``notes``'s effect step, its last, before ``forecast``'s steps.
Resumed without the file, ``tally`` waits 0.3 s first — the resume's stop at ``notes``'s step
waits for it, whose steps are recorded before — while ``weather`` calls ``forecast`` at once:
the replay makes steps recorded after the stop before it. Each real effect appends a line to
the side file.
Usage: traced_crash_tasks.py SIDE"""

import asyncio
import os
import sys

import snapstate_capture as snap

SIDE = sys.argv[1]


def note(line):
    with open(SIDE, "a") as handle:
        handle.write(line + "\n")


@snap.effect(name="notes")
async def notes(topic):
    note(f"notes {topic}")
    await asyncio.sleep(0.1)
    return f"{topic}: water weekly"


@snap.effect(name="forecast")
async def forecast(city):
    note(f"forecast {city}")
    await asyncio.sleep(60 if os.path.exists(SIDE + ".slow") else 1)
    return f"{city}: rain"


async def tally():
    await asyncio.sleep(0 if os.path.exists(SIDE + ".slow") else 0.3)
    return sum(range(10))


async def weather():
    await asyncio.sleep(0.5 if os.path.exists(SIDE + ".slow") else 0)
    return await forecast("Oslo")


async def main():
    print(await asyncio.gather(notes("roses"), tally(), weather()))


asyncio.run(main())
