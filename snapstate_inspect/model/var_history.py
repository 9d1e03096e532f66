"""A variable's history: the steps where it changed, scanned in the background (UI-free).

A variable (``VariableKey``) is followed through the frame at its stack position while that
frame runs its function; steps where the frame is absent (returned, not yet called) are skipped
and keep the last value seen, so a new call that starts with another value counts as a change.
Values are compared by content hash (payload, else preview); for a path inside a value
(``key.path``) by the child's preview.

``iter_changes`` reads frame hashes in chunks (``Steps.frame_keys``) and yields ``Progress``
between chunks, so a caller in a worker thread can show progress and stop early; each frame
record is decoded once per scan (cached by hash), which is what makes a million steps feasible:
identical frames share one record.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from snapstate_capture import Run, SnapStateError, Value

from .values import PreviewLoader, VariableKey, children

CHUNK = 2000
_CACHE_LIMIT = 100_000


@dataclass(frozen=True)
class Change:
    """The variable changed at ``step``: ``old``/``new`` are value refs (None: absent before /
    gone now); ``old_digest``/``new_digest`` identify the contents compared."""

    step: int
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    old_digest: str | None
    new_digest: str | None

    @property
    def kind(self) -> str:
        if self.old_digest is None:
            return "added"
        if self.new_digest is None:
            return "removed"
        return "changed"


@dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` steps scanned so far."""

    done: int
    total: int


_ABSENT = object()


class VariableTracker:
    """Reads one variable's content identity at any step of ``run`` (cached by frame hash)."""

    def __init__(self, run: Run, key: VariableKey, loader: PreviewLoader | None = None) -> None:
        self.run = run
        self.key = key
        self.loader = loader or PreviewLoader()
        self._frames: dict[str, Any] = {}
        self._paths: dict[str, str | None] = {}

    def probe(self, frame_keys: list[str]) -> Any:
        """``_ABSENT`` when the frame is not on this stack, else ``(digest | None, ref | None)``."""
        position = self.key.position
        if position >= len(frame_keys):
            return _ABSENT
        frame_key = frame_keys[position]
        found = self._frames.get(frame_key)
        if found is None:
            found = self._read_frame(frame_key)
            if len(self._frames) > _CACHE_LIMIT:
                self._frames.clear()
            self._frames[frame_key] = found
        return found

    def probe_ref(self, ref: dict[str, Any] | None) -> tuple[str | None, Any]:
        """``(digest | None, ref | None)`` of a value ref read from a traced step."""
        if ref is None:
            return (None, None)
        if self.key.path:
            return (self._path_digest(ref), ref)
        return (Value(self.run.timeline, self.key.name, ref).digest, ref)

    def _read_frame(self, frame_key: str) -> Any:
        try:
            record = self.run.timeline.json_blob(frame_key)
        except SnapStateError:
            return _ABSENT
        if not isinstance(record, dict) or str(record.get("function")) != self.key.function:
            return _ABSENT
        for item in record.get("locals") or ():
            if (isinstance(item, list) and len(item) == 2 and item[0] == self.key.name
                    and isinstance(item[1], dict)):
                ref = item[1]
                digest = Value(self.run.timeline, self.key.name, ref).digest
                if self.key.path:
                    digest = self._path_digest(ref)
                return (digest, ref)
        return (None, None)

    def _path_digest(self, ref: dict[str, Any]) -> str | None:
        """Identity of the child at ``key.path`` inside the value (its preview as JSON)."""
        preview_key = Value(self.run.timeline, self.key.name, ref).digest
        if preview_key in self._paths:
            return self._paths[preview_key]
        node: dict[str, Any] | None = self.loader.load(Value(self.run.timeline, "", ref))
        for label in self.key.path:
            node = dict(children(node)).get(label) if node is not None else None
        digest = None if node is None else json.dumps(node, sort_keys=True)
        self._paths[preview_key] = digest
        return digest


def iter_changes(run: Run, key: VariableKey, start: int, stop: int, *, backward: bool = False,
                 loader: PreviewLoader | None = None, chunk: int = CHUNK
                 ) -> Iterator[Change | Progress]:
    """Yield the changes of ``key`` at steps ``start`` … ``stop - 1`` and ``Progress`` per chunk.

    Forward: each change compares a step with the last earlier step where the frame was present
    (looked up before ``start`` too, so a scan can begin anywhere). Backward: changes come
    latest first, over the same range. Steps recorded by the tracer (trace chunks) are read
    a chunk at a time by the reader's ``scan_traced_variable``, which reports only the steps
    where the value may have changed; the comparison is the same.
    """
    tracker = VariableTracker(run, key, loader)
    total = max(stop - start, 0)
    if backward:
        yield from _backward(tracker, start, stop, total, chunk)
        return
    last = _last_before(tracker, start, chunk)
    done = 0
    for item in _probes(tracker, start, stop, chunk=chunk):
        if isinstance(item, int):
            done += item
            yield Progress(done, total)
            continue
        index, probe = item
        if last is not None and probe[0] != last[0]:
            yield Change(index, last[1], probe[1], last[0], probe[0])
        elif last is None and probe[0] is not None:
            yield Change(index, None, probe[1], None, probe[0])
        last = probe


def _probes(tracker: VariableTracker, start: int, stop: int, *, chunk: int,
            backward: bool = False) -> Iterator[tuple[int, Any] | int]:
    """``(index, (digest, ref))`` at the steps of ``start`` … ``stop - 1`` where the variable's
    frame is on the stack — every such step of the ``steps`` table, and for traced steps those
    where the value may have changed (the others repeat the previous one) — in step order
    (latest first when ``backward``); between them, ints: how many more steps were covered."""
    run = tracker.run
    traced = run.steps.has_traced()
    scans = (run.steps.scan_traced_variable(tracker.key.position, tracker.key.function,
                                            tracker.key.name, start, stop, backward=backward)
             if traced else iter(()))
    position = stop if backward else start
    for scan in scans:
        low, high = max(scan.first, start), min(scan.first + scan.count, stop)
        if backward:
            yield from _row_probes(tracker, high, position, chunk, backward=True)
            found = [(i, tracker.probe_ref(ref)) for i, ref in scan.found]
            rows = list(_row_probes(tracker, low, high, chunk))
            merged = sorted([*found, *(r for r in rows if not isinstance(r, int))])
            yield from reversed(merged)
            position = low
        else:
            yield from _row_probes(tracker, position, low, chunk)
            found = [(i, tracker.probe_ref(ref)) for i, ref in scan.found]
            rows = [r for r in _row_probes(tracker, low, high, chunk) if not isinstance(r, int)]
            yield from (sorted([*found, *rows]) if rows else found)
            position = high
        yield high - low
    if backward:
        yield from _row_probes(tracker, start, position, chunk, backward=True)
    else:
        yield from _row_probes(tracker, position, stop, chunk)


def _row_probes(tracker: VariableTracker, start: int, stop: int, chunk: int, *,
                backward: bool = False) -> Iterator[tuple[int, Any] | int]:
    """Probes of the ``steps`` rows among ``start`` … ``stop - 1``, ``chunk`` steps per read,
    each read followed by the number of steps it covered."""
    if stop <= start:
        return
    bounds = range(start, stop, chunk)
    for begin in (reversed(bounds) if backward else bounds):
        end = min(begin + chunk, stop)
        rows = tracker.run.steps.frame_keys(begin, end)
        for index, frame_keys in (reversed(rows) if backward else rows):
            probe = tracker.probe(frame_keys)
            if probe is not _ABSENT:
                yield index, probe
        yield end - begin


def _last_before(tracker: VariableTracker, start: int, chunk: int) -> Any:
    """The variable's (digest, ref) at the last step before ``start`` where its frame ran."""
    covered = 0
    for item in _probes(tracker, max(start - 50 * chunk, 0), start, chunk=chunk,
                        backward=True):
        if not isinstance(item, int):
            return item[1]
        covered += item
    return None  # far enough: treat as unknown rather than scan the whole run backwards


def _backward(tracker: VariableTracker, start: int, stop: int, total: int, chunk: int
              ) -> Iterator[Change | Progress]:
    later: tuple[int, Any] | None = None
    done = 0
    for item in _probes(tracker, start, stop, chunk=chunk, backward=True):
        if isinstance(item, int):
            done += item
            yield Progress(done, total)
            continue
        index, probe = item
        if later is not None and probe[0] != later[1][0]:
            yield Change(later[0], probe[1], later[1][1], probe[0], later[1][0])
        later = (index, probe)
    if later is not None and later[1][0] is not None and start == 0:
        yield Change(later[0], None, later[1][1], None, later[1][0])


def find_change(run: Run, key: VariableKey, current: int, *, backward: bool = False,
                loader: PreviewLoader | None = None, chunk: int = CHUNK,
                cancelled: Any = None) -> int | None:
    """The step of the next (previous) change of ``key`` after (before) ``current``, or None.

    ``cancelled`` is an optional callable checked between chunks; when it returns True the
    search stops and None is returned.
    """
    if backward:
        scan = iter_changes(run, key, 0, current, backward=True, loader=loader, chunk=chunk)
    else:
        scan = iter_changes(run, key, current + 1, len(run.steps), loader=loader, chunk=chunk)
    for item in scan:
        if isinstance(item, Change):
            if backward and item.step >= current:
                continue
            return item.step
        if cancelled is not None and cancelled():
            return None
    return None
