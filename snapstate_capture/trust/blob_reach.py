"""Every blob a run reaches, checked for presence and hash: what ``verify`` reads beyond the
rows (DESIGN.md "Trust": a reader shows nothing that verify did not check).

From a run's steps: frame records, their source texts and locals' previews and payloads; step
values; from trace chunks: every value and source they name; from the effect journal: each
result, the arguments' preview and the random generator's state; from the entry: saved
generator states and a workflow's arguments. Previews are followed to their children lists
(``store/previews.py``) and payload manifests to their pieces (``store/blobs.py``); each blob
is followed once. A sealed (encrypted) blob is checked but not opened.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import TimelineError
from ..store import blobs, chunks
from ..store.hashing import DIGEST_SIZE
from ..store.reader import Timeline


@dataclass
class BlobProblem:
    """One bad blob a run uses: ``kind`` ("payload", "preview", "frame record", "source",
    "preview children", "payload piece", "rng state"), ``problem`` ("corrupt (hash mismatch)",
    "missing", …) and the ``steps`` (indices, ascending) whose stack or values reference it
    (a traced step's chunk is named by its first step)."""

    kind: str
    problem: str
    steps: list[int] = field(default_factory=list)


def _loads(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, (str, bytes)) else None
    except (ValueError, RecursionError):
        return None


_JSON_KINDS = ("frame record", "preview", "preview children")


class BlobReach:
    """Walks every blob a run reaches and maps the missing and bad ones to the steps that use
    them; each blob is followed once (frame records, previews and children lists parsed, payload
    manifests' pieces listed)."""

    def __init__(self, timeline: Timeline, known: set[bytes], bad: dict[str, str]) -> None:
        self.timeline = timeline
        self.known = known
        self.bad = bad
        self.problems: dict[str, BlobProblem] = {}
        self._followed: dict[str, tuple[tuple[Any, str], ...]] = {}

    def _problem(self, key: str) -> str | None:
        if key in self.bad:
            return self.bad[key]
        try:
            raw = bytes.fromhex(key)
        except ValueError:
            return "malformed reference"
        return None if len(raw) == DIGEST_SIZE and raw in self.known else \
            "missing" if len(raw) == DIGEST_SIZE else "malformed reference"

    def need(self, key: Any, step: int, kind: str) -> None:
        """Blob ``key`` (hex) must be present and intact for step ``step``: note it if not,
        and follow what it refers to."""
        stack = [(key, kind)]
        while stack:
            current, what = stack.pop()
            if not isinstance(current, str):
                self._note(repr(current)[:32], step, what, "malformed reference")
                continue
            problem = self._problem(current)
            if problem:
                self._note(current, step, what, problem)
                continue
            stack.extend(self._follow(current, what))

    def _note(self, key: str, step: int, kind: str, problem: str) -> None:
        entry = self.problems.setdefault(key, BlobProblem(kind, problem))
        if not entry.steps or entry.steps[-1] != step:
            entry.steps.append(step)

    def _follow(self, key: str, kind: str) -> tuple[tuple[Any, str], ...]:
        """The blobs ``key`` refers to (computed once per key)."""
        cached = self._followed.get(key)
        if cached is not None:
            return cached
        self._followed[key] = ()  # a cycle ends here
        out: list[tuple[Any, str]] = []
        try:
            if kind in _JSON_KINDS:
                out = _json_refs(kind, self.timeline.json_blob(key))
            elif kind in ("payload", "payload piece"):
                out = [(piece, "payload piece") for piece in self._pieces(key)]
        except (TimelineError, ValueError):
            out = []  # undecodable: the blob scan reports it; nothing below it is known
        self._followed[key] = result = tuple(out)
        return result

    def _pieces(self, key: str) -> list[str]:
        row = self.timeline.engine.blob_row(bytes.fromhex(key))
        if row is None or not _int(row[0]) or not row[0] & blobs.MANIFEST:
            return []
        problem = self.timeline.blob_problem(bytes.fromhex(key))
        if problem:
            return []
        return self.timeline.blob_pieces(key) or []

    def add_ref(self, step: int, ref: Any) -> None:
        """A value ref (``{"p": preview, "b": payload, "x": key id, …}``)."""
        if not isinstance(ref, dict):
            return
        sealed = isinstance(ref.get("x"), str)  # an envelope: nothing inside can be followed
        if "p" in ref:
            self.need(ref["p"], step, "sealed preview" if sealed else "preview")
        if "b" in ref:
            self.need(ref["b"], step, "sealed payload" if sealed else "payload")

    def add_step(self, index: int, frames_text: Any, extra_text: Any) -> None:
        frames = _loads(frames_text)
        for frame_key in frames if isinstance(frames, list) else ():
            self.need(frame_key, index, "frame record")
        extra = _loads(extra_text)
        for ref in extra.values() if isinstance(extra, dict) else ():
            self.add_ref(index, ref)

    def add_effect(self, step: int, value: Any) -> None:
        """An effect-journal value: the result/exception ref, ``a`` (the arguments' preview, or
        their ref), ``r`` (the random generator's state after the call)."""
        if not isinstance(value, dict):
            return
        self.add_ref(step, value)
        args = value.get("a")
        if isinstance(args, dict):
            self.add_ref(step, args)
        elif args is not None:
            self.need(args, step, "preview")
        if value.get("r") is not None:
            self.need(value["r"], step, "rng state")

    def add_entry(self, entry_text: Any) -> None:
        """The run's entry: saved random-generator states and a workflow's arguments."""
        entry = _loads(entry_text)
        if not isinstance(entry, dict):
            return
        rng = entry.get("rng")
        for key in rng.values() if isinstance(rng, dict) else ():
            self.need(key, 0, "rng state")
        self.add_ref(0, entry.get("args"))

    def add_chunk(self, first: int, data: Any) -> None:
        """Every value ref and source text in a trace chunk (named by its first step)."""
        if not isinstance(data, bytes):
            return
        try:
            header, items = chunks.decode(data)
        except ValueError:
            return  # the chain check reports a malformed chunk
        for key, kind in chunks.blob_keys(header, items):
            self.need(key, first, kind)


def _json_refs(kind: str, record: Any) -> list[tuple[Any, str]]:
    """The blobs a frame record, preview or children list names, with what each is."""
    out: list[tuple[str, str]] = []
    if kind == "frame record" and isinstance(record, dict):
        if record.get("source") is not None:
            out.append((record["source"], "source"))
        for item in record.get("locals") or ():
            if isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict):
                out.extend(_ref_keys(item[1]))
    elif kind == "preview" and isinstance(record, dict) and "kids" in record:
        out.append((record["kids"], "preview children"))
    return out


def _ref_keys(ref: dict[str, Any]) -> list[tuple[Any, str]]:
    """The blob keys a value ref names, with what each is."""
    sealed = isinstance(ref.get("x"), str)
    return [(ref[k], ("sealed " if sealed else "") + kind)
            for k, kind in (("p", "preview"), ("b", "payload")) if k in ref]


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
