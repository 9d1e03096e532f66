"""A research agent that runs offline: the main sample program of SnapState.

It works the way an LLM agent does — ask the model for a plan, search, read, summarise each
source with the model, fetch citations from a flaky API (retrying when it fails), ask a human to
approve the outline, write the report — with every part local and deterministic: the model is
rule-based (``rules_model.py``), the search runs over ``examples/corpus/``, and the citation API
fails on a fixed schedule (``agent_tools.py``). Recorded, one run is about 200 steps.

    python -m examples.research_agent [--out FILE] [--goal TEXT]

records a run into FILE (default ``research_agent.snap``); it asks for approval on the terminal
(answer ``yes``, or ``skip N`` to drop section N). ``python -m examples.make_samples`` records the
samples in ``sample_snapshots/`` from this program.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import snapstate_capture as snap

from . import corpus_search
from .agent_tools import ServiceUnavailable, ask_human, backoff, call_model, fetch_citation

GOAL = "Should the city fund green roofs on its public buildings?"
SOURCES_PER_SECTION = 3
CITATION_ATTEMPTS = 3


@dataclass
class Source:
    """A document the agent has read: id, title and year of publication."""

    doc_id: str
    title: str
    year: int


@dataclass
class Note:
    """What the model said about one source for one section."""

    doc_id: str
    summary: str
    confidence: float


@dataclass
class Subtask:
    """One section of the report: its number, title, search query, status and notes."""

    number: int
    title: str
    query: str
    status: str = "todo"
    notes: list[Note] = field(default_factory=list)


def run_agent(goal: str) -> str:
    """Research ``goal`` and return the report as Markdown text."""
    docs = corpus_search.load_corpus()
    index = build_index(docs)
    subtasks = plan(goal)
    snap.checkpoint("planned", sections=[s.title for s in subtasks])
    sources: dict[str, Source] = {}
    citations: dict[str, dict] = {}
    for subtask in subtasks:
        research(subtask, docs, index, sources, citations)
    outline = make_outline(subtasks, sources)
    answer = ask_human(outline + "\nPublish this outline? [yes / skip N] ")
    kept = apply_decision(answer, subtasks)
    snap.checkpoint("approved", answer=answer, kept=[s.number for s in kept])
    report = write_report(goal, kept, sources, citations)
    snap.checkpoint("report ready", words=len(report.split()))
    return report


@snap.step
def build_index(docs: dict[str, corpus_search.Document]) -> dict[str, dict[str, int]]:
    """Term counts of every corpus document (see ``corpus_search.build_index``)."""
    return corpus_search.build_index(docs)


@snap.step
def plan(goal: str) -> list[Subtask]:
    """Ask the model for the report's sections and turn them into subtasks."""
    answer = call_model({"task": "plan", "goal": goal})
    return [Subtask(number, item["title"], item["query"])
            for number, item in enumerate(answer["subtasks"], start=1)]


@snap.step
def research(subtask: Subtask, docs: dict[str, corpus_search.Document],
             index: dict[str, dict[str, int]], sources: dict[str, Source],
             citations: dict[str, dict]) -> int:
    """Search for ``subtask``, summarise the best sources, cite each; return the note count."""
    subtask.status = "searching"
    hits = search(index, subtask.query)
    for hit in hits:
        doc = docs[hit.doc_id]
        source = sources.setdefault(doc.doc_id, Source(doc.doc_id, doc.title, doc.year))
        reply = call_model({"task": "summarise", "question": subtask.query,
                            "text": doc.text, "max_sentences": 2})
        if reply["summary"]:
            subtask.notes.append(Note(doc.doc_id, reply["summary"], reply["confidence"]))
        if doc.doc_id not in citations:
            citations[doc.doc_id] = cite(source)
        snap.checkpoint("note taken", doc=doc.doc_id, confidence=reply["confidence"])
        log_progress(subtask, source)
    subtask.status = "done"
    return len(subtask.notes)


@snap.step
def search(index: dict[str, dict[str, int]], query: str) -> list[corpus_search.Hit]:
    """The best corpus documents for ``query``."""
    return corpus_search.search(index, query, limit=SOURCES_PER_SECTION)


@snap.step
def cite(source: Source) -> dict:
    """Fetch the citation of ``source``, retrying while the service is unavailable.

    Raises ``ServiceUnavailable`` after ``CITATION_ATTEMPTS`` failed attempts.
    """
    for attempt in range(1, CITATION_ATTEMPTS + 1):
        try:
            return fetch_citation(source.doc_id, source.title, source.year)
        except ServiceUnavailable as error:
            if attempt == CITATION_ATTEMPTS:
                raise
            delay = 0.01 * 2 ** attempt
            snap.checkpoint("retrying", attempt=attempt, error=str(error), delay=delay)
            backoff(delay)
    raise AssertionError("unreachable")


@snap.step
def describe_source(source: Source) -> str:
    """A short description of ``source`` for the progress log: ``stormwater (2021)``."""
    return f"{source.doc_id} ({source.year})"


def log_progress(subtask: Subtask, source: Source) -> None:
    """Print one progress line."""
    print(f"  [{subtask.number}] {subtask.title}: read {describe_source(source)}")


@snap.step
def make_outline(subtasks: list[Subtask], sources: dict[str, Source]) -> str:
    """The outline shown to the human: sections with their note counts."""
    lines = [f"Outline ({len(sources)} sources):"]
    for subtask in subtasks:
        lines.append(f"  {subtask.number}. {subtask.title} - {len(subtask.notes)} notes")
    return "\n".join(lines)


@snap.step
def apply_decision(answer: str, subtasks: list[Subtask]) -> list[Subtask]:
    """The subtasks kept after the human's ``answer`` (``yes``, or ``skip N[,M]``)."""
    words = answer.lower().replace(",", " ").split()
    if not words or words[0] != "skip":
        return list(subtasks)
    skipped = {int(word) for word in words[1:] if word.isdigit()}
    for subtask in subtasks:
        if subtask.number in skipped:
            subtask.status = "skipped"
    return [s for s in subtasks if s.number not in skipped]


@snap.step
def write_report(goal: str, kept: list[Subtask], sources: dict[str, Source],
                 citations: dict[str, dict]) -> str:
    """The report: one section per kept subtask, then the bibliography, newest first."""
    parts = [f"# {goal}", ""]
    for subtask in kept:
        parts.append(write_section(subtask, citations))
    used = sorted({note.doc_id for subtask in kept for note in subtask.notes})
    parts.append("## Sources")
    for source in bibliography([sources[doc_id] for doc_id in used]):
        citation = citations[source.doc_id]
        parts.append(f"- [{citation['key']}] {source.title} ({source.year}), {citation['url']}")
    return "\n".join(parts) + "\n"


@snap.step
def write_section(subtask: Subtask, citations: dict[str, dict]) -> str:
    """One section: each note's summary followed by its citation key."""
    lines = [f"## {subtask.number}. {subtask.title}"]
    for note in subtask.notes:
        lines.append(f"{note.summary} [{citations[note.doc_id]['key']}]")
    return "\n".join(lines) + "\n"


@snap.step
def bibliography(used: list[Source]) -> list[Source]:
    """The sources cited in the report, newest first (ties by id)."""
    return sorted(used, key=lambda source: (-source.year, source.doc_id))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="research_agent.snap", help="timeline file to record")
    parser.add_argument("--goal", default=GOAL, help="what to research")
    parser.add_argument("--name", default="research-agent", help="name of the recorded run")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with snap.record(args.out, name=args.name):
        report = run_agent(args.goal)
    print(report)


if __name__ == "__main__":
    # Run the importable module's main(), so the agent's classes are pickled as
    # examples.research_agent.Subtask (loadable later, in the inspector or a REPL) rather than
    # as __main__.Subtask, which only this process has.
    from examples.research_agent import main as importable_main

    importable_main()
