"""Deciding, a window of pairs at a time, whether aligned steps of two runs hold the same state.

``diff_runs`` asks of every aligned pair of steps whether their states are the same. Asked one
pair at a time (``StepDiffer.same_state``), that read both steps' frame records with a query per
blob and built a ``Value`` for every local of every frame: two 10,000-step runs took 7 s of
CPU (issue 19, point 3). ``PairMatcher.verdicts`` answers the same questions from what the file
already says, ``WINDOW`` pairs at a time:

- the steps' frame-record keys and step-value refs come from one query per window and side
  (``Steps.state_refs``: no ``Step`` objects); a frame record is content-addressed, so the same
  key on both sides is the same record, never read;
- the records whose keys differ are read ahead a few hundred per query into the blob cache
  (``Timeline.prefetch``), then parsed one pair at a time; equal stored locals lists are equal
  locals (each ref names its value's content by hash);
- for the locals whose refs differ, ``StepDiffer.same_locals`` — the very check ``same_state``
  makes — is asked about those names only (the others are the same content, which it skips),
  after a check remembered per pair of refs: the inputs two runs differ in (``known_refs``)
  are the same two refs at every step. Verdicts per pair of frame-record keys are kept, as
  ``same_state`` keeps its own.

Each verdict is what ``same_state`` answers; ``None`` (a traced step, stored in chunks with no
frame records of its own; stacks of other depths; a record that cannot be read) leaves the
pair to ``same_state``. ``tests/inspect/test_diff_fast_path.py`` compares run diffs made both
ways on recorded runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from snapstate_capture import Frame, Run, SnapStateError, Step, Timeline, Value

from .diff import STEP_VALUES, StepDiffer, same_content

#: Aligned pairs whose frame records are read together (two queries of ≤ 500 keys per side).
WINDOW = 512


class PairMatcher:
    """Verdicts on aligned pairs of steps of runs read from ``timeline_a`` and ``timeline_b``,
    by ``differ`` with ``known`` and ``known_refs`` as for ``StepDiffer.same_state``."""

    def __init__(self, differ: StepDiffer, timeline_a: Timeline, timeline_b: Timeline,
                 known: frozenset | set = frozenset(),
                 known_refs: frozenset | set = frozenset()) -> None:
        self.differ = differ
        self.timelines = (timeline_a, timeline_b)
        self.known, self.known_refs = known, known_refs
        #: Verdicts by frame-record keys (A's, B's), as ``same_state`` keeps its own.
        self._frames: dict[tuple[str, str], bool] = {}
        self._quick: dict[tuple, bool] = {}

    def verdicts(self, runs: tuple[Run, Run], steps: tuple[Sequence[Step], Sequence[Step]],
                 a_start: int, b_start: int, count: int) -> Iterator[bool | None]:
        """One verdict per pair ``(a_start + k, b_start + k)``, ``k < count``, in order
        (``True`` same, ``False`` different, ``None`` undecided), a window read ahead.
        ``runs`` are the two runs, ``steps`` their steps (indexed only when a value's payload
        may be loaded: ``DiffOptions.full_values``, whose trust check needs the step)."""
        for first in range(0, count, WINDOW):
            size = min(WINDOW, count - first)
            a0, b0 = a_start + first, b_start + first
            refs = (runs[0].steps.state_refs(a0, a0 + size),
                    runs[1].steps.state_refs(b0, b0 + size))
            yield from self._window(refs, steps, [(a0 + k, b0 + k) for k in range(size)])

    def _window(self, refs: tuple[dict, dict], steps: tuple[Sequence[Step], Sequence[Step]],
                pairs: list[tuple[int, int]]) -> list[bool | None]:
        want_a: list[str] = []
        want_b: list[str] = []
        for i, j in pairs:
            ra, rb = refs[0].get(i), refs[1].get(j)
            if ra is not None and rb is not None and len(ra[0]) == len(rb[0]):
                for x, y in zip(ra[0], rb[0]):
                    if x != y:
                        want_a.append(x)
                        want_b.append(y)
        try:
            self.timelines[0].prefetch(want_a)
            self.timelines[1].prefetch(want_b)
        except SnapStateError:
            return [None] * len(pairs)  # same_state reads them one by one and says what is wrong
        out: list[bool | None] = []
        for i, j in pairs:
            ra, rb = refs[0].get(i), refs[1].get(j)
            if ra is None or rb is None:
                out.append(None)
                continue
            out.append(self._decide(ra, rb, steps, i, j))
        return out

    def _decide(self, state_a: tuple[list[str], dict], state_b: tuple[list[str], dict],
                steps: tuple[Sequence[Step], Sequence[Step]], i: int, j: int) -> bool | None:
        (keys_a, extra_a), (keys_b, extra_b) = state_a, state_b
        if not keys_a or len(keys_a) != len(keys_b):
            return None
        pending: list[tuple[str, str, dict, dict]] = []
        for x, y in zip(keys_a, keys_b):
            if x == y:
                continue
            known = self._frames.get((x, y))
            if known is False:
                return False  # same_state says False whether for this frame or a function
            if known:
                continue  # kept only once the functions were found equal
            try:  # read ahead: parsed from the blob cache, one pair's records alive at a time
                ra = self.timelines[0].json_blob(x, remember=False)
                rb = self.timelines[1].json_blob(y, remember=False)
            except SnapStateError:
                return None
            if not isinstance(ra, dict) or not isinstance(rb, dict):
                return None
            pending.append((x, y, ra, rb))
        functions = []
        for x, y, ra, rb in pending:
            name = ra.get("function")
            if name != rb.get("function") or type(name) is not str or len(name) > 10_000:
                name = Frame(self.timelines[0], x, ra).function  # as the reader names it
                if name != Frame(self.timelines[1], y, rb).function:
                    return False  # same_state: the stacks' functions differ
            functions.append(name)
        where = (i, j, steps)
        for (x, y, ra, rb), function in zip(pending, functions):
            verdict = self._same_frame(function, x, y, ra, rb, where)
            self._frames[(x, y)] = verdict
            if len(self._frames) > 100_000:
                self._frames.clear()
            if not verdict:
                return False
        if extra_a == extra_b:
            return True
        return self._same(STEP_VALUES, extra_a, extra_b, where)

    def _same_frame(self, function: str, x: str, y: str, ra: dict, rb: dict,
                    where: tuple[int, int, tuple[Sequence[Step], Sequence[Step]]]) -> bool:
        """Whether frame records ``ra`` (key ``x``, run A) and ``rb`` (``y``, B) of
        ``function`` hold the same locals, as ``same_state`` judges them."""
        found = _differing_locals(ra.get("locals"), rb.get("locals"))
        if found is None:  # not comparable as stored: as the reader sanitizes them
            fa, fb = Frame(self.timelines[0], x, ra), Frame(self.timelines[1], y, rb)
            return fa.local_refs == fb.local_refs or self._same(
                function, dict(fa.local_refs), dict(fb.local_refs), where)
        return not found[0] or self._same(function, found[0], found[1], where)

    def _same(self, frame: str, refs_a: dict[str, Any], refs_b: dict[str, Any],
              where: tuple[int, int, tuple[Sequence[Step], Sequence[Step]]]) -> bool:
        """``StepDiffer.same_locals`` of two name -> ref maps, with ``Value`` objects built
        only for the names whose refs differ (equal refs: the same content, which
        ``same_locals`` skips first)."""
        differing = [name for name, ref in refs_a.items() if refs_b.get(name) != ref]
        differing += [name for name in refs_b if name not in refs_a]
        left = [name for name in differing if not self._passes(frame, name, refs_a.get(name),
                                                                refs_b.get(name))]
        if not left:
            return True
        a = b = None
        if self.differ.options.full_values:  # loading a payload checks its step's run
            i, j, steps = where
            a, b = steps[0][i], steps[1][j]
        values_a = {name: Value(self.timelines[0], name, refs_a[name], step=a)
                    for name in left if name in refs_a}
        values_b = {name: Value(self.timelines[1], name, refs_b[name], step=b)
                    for name in left if name in refs_b}
        return self.differ.same_locals(frame, values_a, values_b, self.known, self.known_refs)

    def _passes(self, frame: str, name: str, ref_a: dict[str, Any] | None,
                ref_b: dict[str, Any] | None) -> bool:
        """``same_locals``' first check on one name (present on both sides, same content or
        a known input content pair), remembered by the two refs when it passes: the inputs
        two runs differ in are the same pair of refs at every step."""
        if ref_a is None or ref_b is None:
            return False
        try:
            key = (frame, name, tuple(ref_a.items()), tuple(ref_b.items()))
            hit = self._quick.get(key)
        except TypeError:  # an unhashable field in a hostile ref: no memo
            key, hit = None, None
        if hit is None:
            va, vb = Value(self.timelines[0], name, ref_a), Value(self.timelines[1], name, ref_b)
            hit = same_content(va, vb) or (frame, name, va.digest, vb.digest) in self.known_refs
            if hit and key is not None and len(self._quick) < 10_000:
                self._quick[key] = hit  # only what passes repeats (the inputs): kept small
        return hit


def _differing_locals(a: Any, b: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The locals whose stored ``[name, ref]`` items differ between two frame records' lists,
    as two name -> ref maps (empty: the same locals), or None unless the lists can be
    compared item by item as the reader would read them: same length, each differing pair a
    well-formed item of the same string name, that name nowhere else in the list."""
    if type(a) is not list or type(b) is not list or len(a) != len(b):
        return None
    refs_a: dict[str, Any] = {}
    refs_b: dict[str, Any] = {}
    for x, y in zip(a, b):
        if x == y:
            continue  # the same item on both sides: the same local, or dropped on both
        if not (type(x) is list and type(y) is list and len(x) == 2 and len(y) == 2
                and type(x[0]) is str and x[0] == y[0] and type(x[1]) is dict
                and type(y[1]) is dict):
            return None
        refs_a[x[0]], refs_b[x[0]] = x[1], y[1]
    if refs_a and sum(1 for item in a if type(item) is list and item and item[0] in refs_a
                      ) != len(refs_a):
        return None  # a name listed twice: the reader keeps the last one
    return refs_a, refs_b
