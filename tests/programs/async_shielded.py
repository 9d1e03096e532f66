"""An asyncio agent that gives a slow model call a deadline but lets it go on: the deadline
fires while the call goes on (``asyncio.wait_for(asyncio.shield(...))``, ``asyncio.wait(...,
timeout=)``), the agent notes it, then takes the answer when it comes.

    python async_shielded.py OUT.snap|-   # with ``-``: no ``record`` block (``snapstate record``)
"""

import asyncio
import sys

import snapstate_capture as snap


@snap.effect(name="model")
async def model(prompt: str, seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"answer to {prompt}"


async def main() -> list:
    notes = []
    call = asyncio.ensure_future(model("slow", 0.3))
    try:
        notes.append(await asyncio.wait_for(asyncio.shield(call), timeout=0.05))
    except TimeoutError:
        notes.append("still waiting")
        snap.checkpoint("deadline", notes=notes)
        notes.append(await call)
    task = asyncio.create_task(model("tool", 0.3))
    done, pending = await asyncio.wait({task}, timeout=0.05)
    notes.append(f"done {len(done)}, pending {len(pending)}")
    snap.checkpoint("waited", notes=notes)
    notes.append(await task)
    snap.checkpoint("notes", notes=notes)
    return notes


if __name__ == "__main__":
    if sys.argv[1] == "-":
        print(asyncio.run(main()))
    else:
        with snap.record(sys.argv[1], name="async-shielded"):
            print(asyncio.run(main()))
