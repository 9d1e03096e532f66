"""An asyncio agent: answers three questions at once, each calling its tools concurrently.

Each question runs in its own named task (``question-1`` …). A task searches the corpus, then
fetches its best documents concurrently (``asyncio.gather``), then asks the model for an answer.
The tools are async effects with simulated network latency. The latency is counted in event-loop
turns (``asyncio.sleep(0)``), not seconds, so the tasks interleave the same way on every run
and every machine.

    python -m examples.async_agent [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import snapstate_capture as snap

from . import corpus_search, rules_model

QUESTIONS = (
    "How much rain does a green roof hold back?",
    "Do green roofs cool the street in summer?",
    "What does maintaining a green roof involve?",
)
DOCS_PER_QUESTION = 2

_DOCS = corpus_search.load_corpus()
_INDEX = corpus_search.build_index(_DOCS)


async def _network(turns: int) -> None:
    """Simulated latency: give the event loop ``turns`` turns, so other tasks run meanwhile."""
    for _ in range(turns):
        await asyncio.sleep(0)


@snap.effect
async def search_tool(query: str) -> list[dict[str, Any]]:
    """The search API: the best documents for ``query`` as ``[{"doc_id", "score"}]``."""
    await _network(3)
    hits = corpus_search.search(_INDEX, query, limit=DOCS_PER_QUESTION)
    return [{"doc_id": hit.doc_id, "score": hit.score} for hit in hits]


@snap.effect
async def fetch_document(doc_id: str) -> dict[str, Any]:
    """The document API: ``{"doc_id", "title", "text"}``; slower for longer ids."""
    await _network(1 + len(doc_id) % 4)
    doc = _DOCS[doc_id]
    return {"doc_id": doc.doc_id, "title": doc.title, "text": doc.text}


@snap.effect
async def call_model(request: dict[str, Any]) -> dict[str, Any]:
    """The model API (rule-based, see ``rules_model``)."""
    await _network(2)
    return rules_model.complete(request)


@snap.step
async def answer(number: int, question: str) -> dict[str, Any]:
    """Answer one question: search, fetch the hits concurrently, summarise them."""
    hits = await search_tool(question)
    documents = await asyncio.gather(*(fetch_document(hit["doc_id"]) for hit in hits))
    snap.checkpoint("documents fetched", number=number, count=len(documents))
    text = " ".join(document["text"] for document in documents)
    reply = await call_model({"task": "summarise", "question": question, "text": text,
                              "max_sentences": 2})
    result = {"number": number, "question": question, "answer": reply["summary"],
              "sources": [document["doc_id"] for document in documents]}
    snap.checkpoint("answered", number=number, confidence=reply["confidence"])
    return result


async def run_agent(questions: tuple[str, ...]) -> list[dict[str, Any]]:
    """Answer every question concurrently, one task per question; results in question order."""
    results = await asyncio.gather(*(
        asyncio.create_task(answer(number, question), name=f"question-{number}")
        for number, question in enumerate(questions, start=1)))
    snap.checkpoint("all answered", count=len(results))
    return list(results)


async def main_async(out: str, name: str) -> list[dict[str, Any]]:
    with snap.record(out, name=name):
        return await run_agent(QUESTIONS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="async_agent.snap", help="timeline file to record")
    parser.add_argument("--name", default="async-agent", help="name of the recorded run")
    args = parser.parse_args(argv)
    for result in asyncio.run(main_async(args.out, args.name)):
        print(f"{result['number']}. {result['question']}\n   {result['answer']}\n"
              f"   sources: {', '.join(result['sources'])}")


if __name__ == "__main__":
    main()
