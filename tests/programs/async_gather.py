"""An asyncio agent whose tasks interleave by timing: ``gather`` over effects with random delays.

Three question tasks each search (an effect), fetch their hits concurrently with ``gather`` (an
effect per hit, each sleeping a random few milliseconds before it answers) and summarise; the
tasks themselves also wait a random while between stages, so each recording interleaves
differently — and a replay, whose effects answer at once, differently again.

    python async_gather.py OUT.snap|- [PLANT]   # PLANT: question 2 asks for one document fewer

With ``-`` it runs without a ``record`` block (for ``snapstate record``).
"""

import asyncio
import random
import sys

import snapstate_capture as snap

DOCS = {f"doc{n}": f"text of document {n}" for n in range(12)}


@snap.effect
async def search(question: str, limit: int) -> list[str]:
    await asyncio.sleep(random.uniform(0, 0.01))
    start = sum(map(ord, question)) % 6
    return [f"doc{start + k}" for k in range(limit)]


@snap.effect
async def fetch(doc_id: str) -> str:
    await asyncio.sleep(random.uniform(0, 0.01))
    return DOCS[doc_id]


@snap.effect
async def summarise(texts: list[str]) -> str:
    await asyncio.sleep(random.uniform(0, 0.01))
    return " / ".join(text.split()[-1] for text in texts)


async def answer(number: int, question: str, plant: bool) -> dict:
    limit = 2 if plant and number == 2 else 3
    hits = await search(question, limit)
    snap.checkpoint("searched", number=number, hits=hits)
    await asyncio.sleep(random.uniform(0, 0.005))  # not an effect: timing only
    texts = await asyncio.gather(*(fetch(doc) for doc in hits))
    snap.checkpoint("fetched", number=number, count=len(texts))
    summary = await summarise(list(texts))
    snap.checkpoint("answered", number=number, summary=summary)
    return {"number": number, "summary": summary}


async def main(plant: bool) -> list[dict]:
    questions = ["rain", "heat", "upkeep"]
    results = await asyncio.gather(*(asyncio.create_task(answer(n, q, plant), name=f"q{n}")
                                     for n, q in enumerate(questions, start=1)))
    snap.checkpoint("done", results=results)
    return results


def run(plant: bool) -> None:
    for result in asyncio.run(main(plant)):
        print(result["number"], result["summary"])


if __name__ == "__main__":
    if sys.argv[1] == "-":
        run(sys.argv[2:] == ["PLANT"])
    else:
        with snap.record(sys.argv[1], name="async-gather"):
            run(sys.argv[2:] == ["PLANT"])
