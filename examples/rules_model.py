"""A small rule-based "language model" standing in for an LLM in the examples (pure).

``complete(request)`` takes and returns plain dicts, the way an LLM client does, so the agents call
it through one effect function. Two tasks:

- ``{"task": "plan", "goal": str}`` -> ``{"subtasks": [{"title", "query"}, ...], "usage": ...}``:
  the report sections whose trigger words appear in the goal (the background section always).
- ``{"task": "summarise", "question": str, "text": str, "max_sentences": int}`` ->
  ``{"summary": str, "confidence": float, "usage": ...}``: the sentences sharing the most terms
  with the question, in their original order; confidence is the share of question terms covered.

Raises ``ValueError`` for an unknown task.
"""

from __future__ import annotations

import re
from typing import Any

from .corpus_search import terms_of

MODEL_NAME = "rules-0.3"

#: Report sections: (title, search query, words in a goal that call for the section).
SECTIONS = (
    ("Background", "what is a green roof extensive intensive plants", ()),
    ("Stormwater", "rain runoff retention stormwater sewer overflow", ("flood", "rain", "fund")),
    ("Heat and energy", "cooling heat temperature energy savings summer",
     ("heat", "energy", "fund")),
    ("Costs and upkeep", "cost installation maintenance membrane grants drains",
     ("cost", "fund", "budget")),
    ("Wildlife", "habitat insects pollinators biodiversity species", ("wildlife", "fund")),
)


def complete(request: dict[str, Any]) -> dict[str, Any]:
    """Answer one request dict (see the module docstring for the shapes)."""
    task = request.get("task")
    if task == "plan":
        return _plan(str(request["goal"]))
    if task == "summarise":
        return _summarise(str(request["question"]), str(request["text"]),
                          int(request.get("max_sentences", 2)))
    raise ValueError(f"unknown task {task!r}")


def _usage(prompt: str, answer: str) -> dict[str, int]:
    return {"prompt_words": len(prompt.split()), "answer_words": len(answer.split())}


def _plan(goal: str) -> dict[str, Any]:
    words = goal.lower()
    subtasks = [{"title": title, "query": query}
                for title, query, triggers in SECTIONS
                if not triggers or any(t in words for t in triggers)]
    answer = "; ".join(s["title"] for s in subtasks)
    return {"model": MODEL_NAME, "subtasks": subtasks, "usage": _usage(goal, answer)}


def _summarise(question: str, text: str, max_sentences: int) -> dict[str, Any]:
    wanted = set(terms_of(question))
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    scored = [(len(wanted & set(terms_of(s))), -i, s) for i, s in enumerate(sentences)]
    best = sorted(scored, reverse=True)[:max_sentences]
    chosen = [s for score, _, s in sorted(best, key=lambda item: -item[1]) if score > 0]
    covered = set().union(*(set(terms_of(s)) for s in chosen)) & wanted if chosen else set()
    summary = " ".join(chosen)
    confidence = round(len(covered) / len(wanted), 2) if wanted else 0.0
    return {"model": MODEL_NAME, "summary": summary, "confidence": confidence,
            "usage": _usage(question + " " + text, summary)}
