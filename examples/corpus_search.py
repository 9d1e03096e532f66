"""Keyword search over the small text corpus in ``examples/corpus/`` (pure, deterministic).

Each corpus file starts with ``Title:`` and ``Year:`` lines, a blank line, then one sentence per
line. The index is plain data (dicts, lists, ints) so every step of a recorded run can store it;
scores are TF-IDF sums, rounded so they print the same everywhere.

The corpus is illustrative sample text written for these examples, not a source of facts.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

#: The directory of corpus files (``*.txt``), next to this module.
CORPUS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has how in is it its less more most much "
    "not of on or so than that the their them these they this to up what when which while "
    "with our should".split())


@dataclass
class Document:
    """One corpus file: its id (file name without ``.txt``), title, year and sentences."""

    doc_id: str
    title: str
    year: int
    sentences: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@dataclass
class Hit:
    """A search result: the document id, its score (TF-IDF sum, 3 decimals) and matched terms."""

    doc_id: str
    score: float
    terms: list[str]


def terms_of(text: str) -> list[str]:
    """Lower-case word stems of ``text`` without stop words ("roofs" -> "roof")."""
    words = re.findall(r"[a-z]+", text.lower())
    return [_stem(w) for w in words if w not in _STOPWORDS and len(w) > 2]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def parse_document(doc_id: str, text: str) -> Document:
    """Parse one corpus file's text. Raises ``ValueError`` when the header lines are missing."""
    lines = text.splitlines()
    if len(lines) < 3 or not lines[0].startswith("Title: ") or not lines[1].startswith("Year: "):
        raise ValueError(f"corpus file {doc_id!r} lacks its Title:/Year: header")
    sentences = [line.strip() for line in lines[3:] if line.strip()]
    return Document(doc_id, lines[0][len("Title: "):], int(lines[1][len("Year: "):]), sentences)


def load_corpus(directory: str = CORPUS_DIR) -> dict[str, Document]:
    """All ``*.txt`` documents of ``directory``, by id, in name order."""
    docs = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".txt"):
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                docs[name[:-4]] = parse_document(name[:-4], handle.read())
    return docs


def build_index(docs: dict[str, Document]) -> dict[str, dict[str, int]]:
    """Term counts per document: ``{doc_id: {term: count}}`` (terms sorted, for stable output)."""
    index = {}
    for doc_id, doc in docs.items():
        counts: dict[str, int] = {}
        for term in terms_of(doc.title + " " + doc.text):
            counts[term] = counts.get(term, 0) + 1
        index[doc_id] = dict(sorted(counts.items()))
    return index


def search(index: dict[str, dict[str, int]], query: str, limit: int = 3) -> list[Hit]:
    """The ``limit`` best documents for ``query`` by TF-IDF, best first (ties by id)."""
    wanted = sorted(set(terms_of(query)))
    n_docs = len(index)
    hits = []
    for doc_id, counts in index.items():
        score, matched = 0.0, []
        for term in wanted:
            if term in counts:
                df = sum(1 for other in index.values() if term in other)
                score += counts[term] * math.log(1 + n_docs / df)
                matched.append(term)
        if matched:
            hits.append(Hit(doc_id, round(score, 3), matched))
    hits.sort(key=lambda hit: (-hit.score, hit.doc_id))
    return hits[:limit]
