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

from .values import PreviewLoader, children
from .search_state import STEP_VALUE
from .var_history import Progress

CHUNK = 5_000


@dataclass(frozen=True)
class Hit:
    """Step ``step`` matched; ``where`` says what matched (``function``/``file``/``label`` text
    or ``value NAME``, with the path inside the value when a part of it matched). For a value
    of a step's stack, ``frame`` is the position of the frame holding it (0 = outermost) and
    ``name`` its local's name; None when the match is not a local, or is a traced step's (the
    local of its innermost frame)."""

    step: int
    where: str
    frame: int | None = None
    name: str | None = None


def iter_search(run: Run, query: str, *, loader: PreviewLoader | None = None,
                values: bool = True, chunk: int = CHUNK) -> Iterator[list[Hit] | Progress]:
    """Yield hits for ``query`` (case-insensitive substring) over the whole run, in step order.

    A value matches when its name, its preview's repr or the repr of any child in its preview
    (containers included, to the preview's depth) holds the text; ``where`` then names the
    variable and the path inside it (``value program[1]``) — a local of the stack, or else
    one of the step's values (``step value exception``: what an effect raised, its arguments
    or result, a checkpoint's values). A query starting with ``@``
    matches the rest against the steps' functions, files and labels only, never values
    (``@render_token``: the renderer's own steps, not those holding it as a value)."""
    if query.startswith("@"):
        query, values = query[1:], False
    needle = query.lower()
    if not needle:
        return
    loader = loader or PreviewLoader()
    matcher = _ValueMatcher(run, needle, loader)
    total = len(run.steps)
    if run.steps.has_traced():
        yield from _traced_search(run, needle, matcher, total, values, chunk)
        return
    position = 0
    while position < total:
        end = min(position + chunk, total)
        yield _row_hits(run, needle, matcher, position, end, values, traced=False)
        position = end
        yield Progress(position, total)


def _row_hits(run: Run, needle: str, matcher: _ValueMatcher, start: int, stop: int,
              values: bool, *, traced: bool) -> list[Hit]:
    """Hits among the ``steps`` rows of ``start`` … ``stop - 1``."""
    rows = run.steps.state_refs(start, stop)  # index -> (frame keys, step values' refs)
    if traced:  # a traced run: only its rows (checkpoints, @step steps) are read here
        found = {}
        for index in rows:
            summary = run.steps.summaries(index, index + 1)
            if summary and _where(summary[0], needle) != "step":
                found[index] = _where(summary[0], needle)
    else:
        found = {i: "step" for i in run.steps.matching(start, stop, text=needle)}
        if found:
            for summary in run.steps.summaries(min(found), max(found) + 1):
                if summary.index in found:
                    found[summary.index] = _where(summary, needle)
    locals_at: dict[int, tuple[int, str]] = {}
    if values:
        for index, (frame_keys, step_values) in rows.items():
            if index in found:
                continue
            match = matcher.match(frame_keys)
            if match is not None:
                found[index], position, name = match
                locals_at[index] = (position, name)
                continue
            where = matcher.step_value_where(step_values)
            if where is not None:  # an effect's arguments or result, the exception it raised
                found[index] = where
    return [Hit(i, found[i], *locals_at.get(i, (None, None))) for i in sorted(found)]


def _traced_search(run: Run, needle: str, matcher: _ValueMatcher, total: int, values: bool,
                   chunk: int) -> Iterator[list[Hit] | Progress]:
    """The search over a run with traced steps: each trace chunk scanned once by the reader
    (``Steps.scan_traced_matches``), the rows between and among them read as usual."""

    position = 0
    for scan in run.steps.scan_traced_matches(0, total, needle=needle, blob=matcher.local_where,
                                              values=values):
        for begin in range(position, scan.first, chunk):  # rows before this chunk
            end = min(begin + chunk, scan.first)
            yield _row_hits(run, needle, matcher, begin, end, values, traced=True)
            yield Progress(end, total)
        high = min(scan.first + scan.count, total)
        rows = _row_hits(run, needle, matcher, scan.first, high, values, traced=True)
        hits = [Hit(i, where) for i, where in scan.found]
        yield sorted([*hits, *rows], key=lambda hit: hit.step) if rows else hits
        position = max(position, high)
        yield Progress(position, total)
    for begin in range(position, total, chunk):
        end = min(begin + chunk, total)
        yield _row_hits(run, needle, matcher, begin, end, values, traced=True)
        yield Progress(end, total)


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
        self._frames: dict[str, tuple[str, str] | None] = {}
        self._previews: dict[str, str | None] = {}

    def match(self, frame_keys: list[str]) -> tuple[str, int, str] | None:
        """``(where, frame position, local name)`` of the innermost frame's matching local
        (``where``: ``value NAME[path]``; position 0 = outermost frame), or None."""
        for position in range(len(frame_keys) - 1, -1, -1):
            frame_key = frame_keys[position]
            if frame_key not in self._frames:
                if len(self._frames) > 200_000:
                    self._frames.clear()
                self._frames[frame_key] = self._frame_match(frame_key)
            matched = self._frames[frame_key]
            if matched is not None:
                return matched[0], position, matched[1]
        return None

    def local_where(self, name: str, ref: dict) -> str | None:
        """``value NAME[path]`` when the local ``name`` holding ``ref`` matches, else None."""
        if self.needle in name.lower():
            return f"value {name}"
        if "v" in ref and len(ref) == 1:  # a scalar kept in a traced step: its repr is its own
            scalar = ref["v"]
            if type(scalar) in _SCALARS and self.needle in repr(scalar).lower():
                return f"value {name}"
            if type(scalar) in _SCALARS:
                return None
        path = self._value_path(Value(self.run.timeline, name, ref))
        return None if path is None else f"value {name}{path}"

    def step_value_where(self, refs: dict[str, dict]) -> str | None:
        """``step value NAME[path]`` of the first of a step's values (``refs``: name -> value
        ref: an effect's arguments and result or the exception it raised, a checkpoint's
        values) whose name or preview holds the needle, else None."""
        for name, ref in refs.items():
            where = self.local_where(str(name), ref)
            if where is not None:
                return STEP_VALUE + where[len("value "):]
        return None

    def _frame_match(self, frame_key: str) -> tuple[str, str] | None:
        """``(where, local name)`` of the first matching local of frame record
        ``frame_key``, or None."""
        try:
            record = self.run.timeline.json_blob(frame_key)
        except SnapStateError:
            return None
        if not isinstance(record, dict):
            return None
        for item in record.get("locals") or ():
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict)):
                continue
            where = self.local_where(str(item[0]), item[1])
            if where is not None:
                return where, str(item[0])
        return None

    def _value_path(self, value: Value) -> str | None:
        key = value.digest
        if not key:
            return None
        if key not in self._previews:
            if len(self._previews) > 200_000:
                self._previews.clear()
            self._previews[key] = preview_path(self.loader.load(value), self.needle)
        return self._previews[key]


_SCALARS = frozenset({int, float, bool, type(None), str})


def preview_path(preview: dict, needle: str, limit: int = 10_000) -> str | None:
    """Where ``needle`` (lower case) is in ``preview``: the path of the deepest node whose repr
    holds it (``""`` for the value itself, ``"[3][1]"``, ``".name['k']"``), looking through the
    children the preview kept (at most ``limit`` nodes, 50 levels); None when no repr holds it."""
    budget = [limit]

    def walk(path: str, node: dict, depth: int) -> str | None:
        budget[0] -= 1
        for label, child in (children(node) if depth < 50 else ()):
            if budget[0] <= 0:
                break
            found = walk(path + label, child, depth + 1)
            if found is not None:
                return found
        return path if needle in str(node.get("repr", "")).lower() else None

    return walk("", preview, 0)
