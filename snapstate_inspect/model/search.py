"""Search a run for text: functions, files, labels and value previews (UI-free, chunked).

``iter_search`` yields lists of ``Hit`` and a ``Progress`` after each chunk, so a worker thread
can show progress and a hit count and stop when cancelled. Step columns (function, file, label)
are matched by the reader in SQL; previews are matched in Python with each frame record and each
preview decoded at most once per search (identical frames and values share one blob), so a
million steps of a loop cost about as much as its distinct states.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from snapstate_capture import Run, SnapStateError, Value

from .values import PreviewLoader
from .var_history import Progress

CHUNK = 5_000


@dataclass(frozen=True)
class Hit:
    """Step ``step`` matched; ``where`` says what matched (``function``/``file``/``label`` text
    or ``value NAME``)."""

    step: int
    where: str


def iter_search(run: Run, query: str, *, loader: PreviewLoader | None = None,
                values: bool = True, chunk: int = CHUNK) -> Iterator[list[Hit] | Progress]:
    """Yield hits for ``query`` (case-insensitive substring) over the whole run, in step order."""
    needle = query.lower()
    if not needle:
        return
    loader = loader or PreviewLoader()
    matcher = _ValueMatcher(run, needle, loader)
    total = len(run.steps)
    position = 0
    while position < total:
        end = min(position + chunk, total)
        found = {i: "step" for i in run.steps.matching(position, end, text=needle)}
        if found:
            for summary in run.steps.summaries(min(found), max(found) + 1):
                if summary.index in found:
                    found[summary.index] = _where(summary, needle)
        if values:
            for index, frame_keys in run.steps.frame_keys(position, end):
                if index in found:
                    continue
                name = matcher.match(frame_keys)
                if name is not None:
                    found[index] = f"value {name}"
        yield [Hit(i, found[i]) for i in sorted(found)]
        position = end
        yield Progress(position, total)


def _where(summary, needle: str) -> str:
    for label, text in (("function", summary.function), ("label", summary.label),
                        ("file", summary.filename)):
        if text and needle in text.lower():
            return label
    return "step"


class _ValueMatcher:
    """Which local (if any) in a stack has a preview containing the needle; cached by hash."""

    def __init__(self, run: Run, needle: str, loader: PreviewLoader) -> None:
        self.run = run
        self.needle = needle
        self.loader = loader
        self._frames: dict[str, str | None] = {}
        self._previews: dict[str, bool] = {}

    def match(self, frame_keys: list[str]) -> str | None:
        for frame_key in reversed(frame_keys):
            if frame_key not in self._frames:
                if len(self._frames) > 200_000:
                    self._frames.clear()
                self._frames[frame_key] = self._frame_match(frame_key)
            name = self._frames[frame_key]
            if name is not None:
                return name
        return None

    def _frame_match(self, frame_key: str) -> str | None:
        try:
            record = self.run.timeline.json_blob(frame_key)
        except SnapStateError:
            return None
        if not isinstance(record, dict):
            return None
        for item in record.get("locals") or ():
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict)):
                continue
            name, ref = str(item[0]), item[1]
            if self.needle in name.lower():
                return name
            key = Value(self.run.timeline, name, ref).digest
            if not key:
                continue
            if key not in self._previews:
                preview = self.loader.load(Value(self.run.timeline, name, ref))
                self._previews[key] = self.needle in str(preview.get("repr", "")).lower()
            if self._previews[key]:
                return name
        return None
