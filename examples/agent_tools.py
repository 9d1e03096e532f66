"""The research agent's effects: every call to the world outside the program, one function each.

An effect is a call whose result must not be recomputed on replay (DESIGN.md "effect"): the model
call, the citation API, the human's answer, the back-off sleep. Each lives in one small function
so the recorder journals its arguments and its result (or the exception it raised) as an
``effect`` step, and a replay serves them from the journal instead of calling again.

Everything is offline and deterministic: the "model" is ``rules_model.complete``; the citation
service fails on a fixed schedule (every third call answers ``503``); the human's answer comes
from ``input()`` (the sample generator pipes it in).
"""

from __future__ import annotations

import time
from typing import Any

import snapstate_capture as snap

from . import rules_model


class ServiceUnavailable(ConnectionError):
    """The citation service answered 503; the caller may retry."""


class CitationService:
    """A fake citation API that fails on every ``fail_every``-th call, like a busy server.

    ``lookup(doc_id, title, year)`` returns ``{"key", "title", "year", "url"}`` or raises
    ``ServiceUnavailable``. The counter makes the failures reproducible run after run.
    """

    def __init__(self, fail_every: int = 3) -> None:
        self.fail_every = fail_every
        self.calls = 0

    def lookup(self, doc_id: str, title: str, year: int) -> dict[str, Any]:
        self.calls += 1
        if self.calls % self.fail_every == 0:
            raise ServiceUnavailable(f"503 Service Unavailable (citation lookup {doc_id!r})")
        return {"key": f"{doc_id.replace('_', '-')}-{year}", "title": title, "year": year,
                "url": f"https://library.example.org/docs/{doc_id}"}


_CITATIONS = CitationService()


@snap.effect
def call_model(request: dict[str, Any]) -> dict[str, Any]:
    """Send one request to the (rule-based) model and return its answer dict."""
    return rules_model.complete(request)


@snap.effect
def fetch_citation(doc_id: str, title: str, year: int) -> dict[str, Any]:
    """Look a document up in the citation service; raises ``ServiceUnavailable`` when busy."""
    return _CITATIONS.lookup(doc_id, title, year)


@snap.effect
def ask_human(question: str) -> str:
    """Ask the operator on the terminal; end of input counts as ``yes``."""
    try:
        return input(question).strip()
    except EOFError:
        return "yes"


@snap.effect
def backoff(seconds: float) -> None:
    """Wait before a retry."""
    time.sleep(seconds)
