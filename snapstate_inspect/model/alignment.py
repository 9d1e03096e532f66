"""Run diff: align two runs step by step and find where they diverge (issue 8, point 2).

Each step has a **signature** ``(kind, function, line, label)``. The two signature sequences are
aligned by a longest-common-subsequence (insert/delete) alignment, so steps inserted in or
removed from one run do not shift everything after them: common prefix and suffix are trimmed,
then RapidFuzz's C++ ``Indel.opcodes`` aligns the middle (bit-parallel LCS; two 10,000-step runs
with nothing in common take about 10 ms here). Middles too large for its bit matrix
(``MAX_CELLS``) are aligned in windows and the result says so.

``diff_runs(run_a, run_b)`` → ``RunDiff``: the aligned blocks; the **first divergence** — the
first aligned pair whose state differs (``reason="state"``) or the first place where the
sequences part (``reason="sequence"``), whichever comes first in run order; and each divergent
**region** (a stretch of aligned steps with differing state, or of steps present on one side
only), with the variable diff at its start (for one-sided stretches: the state after the
stretch against the other run at the same point).

**Inputs.** Two runs of one program with different inputs usually differ from their very first
step in the inputs themselves (arguments, an output path, a seed), and in exactly the same way
at every later step. Those differences — found at the first aligned pair when both runs start
with the same step — are reported once as ``inputs`` and set aside: a later step counts as
divergent when its state differs in some *other* way (a new difference, or an input that
changed). ``strict=True`` counts them too (the first divergence is then that first step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from rapidfuzz.distance import Indel

from snapstate_capture import Run, Step, StepSummary

from .diff import StepDiff, StepDiffer, change_keys, without
from .run_regions import (AlignedRow, Divergence, Region, first_divergence, input_refs,
                          last_diff, region_diff)
from .state_match import PairMatcher
from .step_pages import StepPages
from .value_diff import Budget, DiffOptions

Signature = tuple[str, "str | None", "int | None", "str | None"]

#: Largest middle (steps of A × steps of B) aligned in one piece (~50 MB of LCS bit matrix).
MAX_CELLS = 400_000_000


def signature(step: Step | StepSummary) -> Signature:
    """The alignment key of a step (or of its summary): ``(kind, function, lineno, label)``."""
    return (step.kind, step.function, step.lineno, step.label)


@dataclass(frozen=True)
class Block:
    """One stretch of the alignment: ``tag`` ``equal`` (same signatures pairwise), ``insert``
    (steps only in B), ``delete`` (only in A) or ``replace`` (different steps on both sides);
    half-open step ranges ``[a_start, a_end)`` and ``[b_start, b_end)``."""

    tag: str
    a_start: int
    a_end: int
    b_start: int
    b_end: int


def align(a: Sequence[Any], b: Sequence[Any]) -> tuple[list[Block], bool]:
    """Align two sequences of hashable signatures; return ``(blocks, approximate)``.

    Blocks cover both sequences in order; an adjacent delete + insert is merged into
    ``replace``. ``approximate`` is True when a middle larger than ``MAX_CELLS`` had to be
    aligned window by window (still a valid alignment, maybe not the longest).
    """
    n, m = len(a), len(b)
    prefix = 0
    while prefix < n and prefix < m and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < n - prefix and suffix < m - prefix and a[n - 1 - suffix] == b[m - 1 - suffix]:
        suffix += 1
    raw: list[tuple[str, int, int, int, int]] = []
    if prefix:
        raw.append(("equal", 0, prefix, 0, prefix))
    approximate = _align_middle(a, b, prefix, n - suffix, prefix, m - suffix, raw)
    if suffix:
        raw.append(("equal", n - suffix, n, m - suffix, m))
    return _merge(raw), approximate


def _align_middle(a: Sequence[Any], b: Sequence[Any], i1: int, i2: int, j1: int, j2: int,
                  out: list[tuple[str, int, int, int, int]]) -> bool:
    if i1 == i2 and j1 == j2:
        return False
    if i1 == i2 or j1 == j2:
        out.append(("delete" if j1 == j2 else "insert", i1, i2, j1, j2))
        return False
    if (i2 - i1) * (j2 - j1) <= MAX_CELLS:
        for op in Indel.opcodes(list(a[i1:i2]), list(b[j1:j2])):
            out.append((op.tag, i1 + op.src_start, i1 + op.src_end,
                        j1 + op.dest_start, j1 + op.dest_end))
        return False
    # Too big for one bit matrix: align proportional windows one after the other.
    window = max(MAX_CELLS // max(j2 - j1, 1), 1)
    windows = max((i2 - i1) // window, 1)
    step_a, step_b = (i2 - i1) / windows, (j2 - j1) / windows
    for w in range(windows):
        _align_middle(a, b, i1 + int(w * step_a), i1 + int((w + 1) * step_a) if w < windows - 1
                      else i2, j1 + int(w * step_b), j1 + int((w + 1) * step_b)
                      if w < windows - 1 else j2, out)
    return True


def _merge(raw: list[tuple[str, int, int, int, int]]) -> list[Block]:
    """Join neighbouring blocks of the same tag and turn delete+insert pairs into replace."""
    blocks: list[Block] = []
    for tag, i1, i2, j1, j2 in raw:
        if i1 == i2 and j1 == j2:
            continue
        if blocks:
            last = blocks[-1]
            if last.tag == tag or (last.tag != "equal" and tag != "equal"):
                merged = tag if last.tag == tag else "replace"
                blocks[-1] = Block(merged, last.a_start, i2, last.b_start, j2)
                continue
        blocks.append(Block(tag, i1, i2, j1, j2))
    return blocks


@dataclass
class RunDiff:
    """Two runs compared. ``pairs`` maps aligned step pairs (``a_index → b_index``) of equal
    blocks; ``identical`` when the sequences match and every aligned state is the same."""

    a: Run
    b: Run
    blocks: list[Block]
    first_divergence: Divergence | None
    regions: list[Region]
    more_regions: int = 0
    approximate: bool = False
    partial: bool = False
    notes: list[str] = field(default_factory=list)
    a_steps: Sequence[Step] = field(default_factory=list, repr=False)
    b_steps: Sequence[Step] = field(default_factory=list, repr=False)
    inputs: StepDiff | None = None
    regions_all: list[Region] = field(default_factory=list, repr=False)
    checked_to: int = 0
    input_keys: frozenset = frozenset()
    differ: StepDiffer | None = field(default=None, repr=False)

    def pair_diff(self, row: AlignedRow) -> StepDiff | None:
        """The step diff shown for one row of ``rows()`` (inputs set aside): the pair itself,
        or for a one-sided step, that step against the other run's step aligned just before
        it (the last common point)."""
        if self.differ is None or not self.a_steps or not self.b_steps:
            return None
        i, j = row.a, row.b
        if i is None:
            i = self._before("b", row.b)
        if j is None:
            j = self._before("a", row.a)
        found = self.differ.diff(self.a_steps[i], self.b_steps[j])
        return without(found, self.input_keys)

    def _before(self, side: str, index: int | None) -> int:
        """The other side's step aligned at or just before step ``index`` of ``side``."""
        best = 0
        for block in self.blocks:
            start, end = (block.a_start, block.a_end) if side == "a" else (block.b_start,
                                                                           block.b_end)
            other = block.b_start if side == "a" else block.a_start
            if block.tag == "equal" and start <= (index or 0):
                best = other + min((index or 0) - start, end - start - 1)
        limit = len(self.b_steps if side == "a" else self.a_steps) - 1
        return min(max(best, 0), limit)

    @property
    def identical(self) -> bool:
        return self.first_divergence is None and self.inputs is None and not self.partial

    def counts(self) -> dict[str, int]:
        """Steps matched, only in A (``deleted``) and only in B (``inserted``)."""
        matched = sum(b.a_end - b.a_start for b in self.blocks if b.tag == "equal")
        return {"matched": matched, "deleted": len(self.a_steps) - matched,
                "inserted": len(self.b_steps) - matched}

    def rows(self) -> list[AlignedRow]:
        """The two runs side by side, one row per aligned pair or one-sided step, in order.

        ``status``: ``same``; ``state`` (aligned, state differs: inside a state region);
        ``inserted`` / ``deleted`` (a step of one side only; a replaced stretch lists A's steps
        as deleted, then B's as inserted); ``unknown`` (not compared: partial result).
        """
        differing: set[int] = set()
        for region in self.regions_all:
            if region.kind == "state":
                differing.update(range(region.a_start, region.a_end))
        checked_to = self.checked_to if self.partial else None
        out: list[AlignedRow] = []
        for block in self.blocks:
            if block.tag == "equal":
                for offset in range(block.a_end - block.a_start):
                    i, j = block.a_start + offset, block.b_start + offset
                    status = "state" if i in differing else "same"
                    if checked_to is not None and i >= checked_to and i not in differing:
                        status = "unknown"
                    out.append(AlignedRow(i, j, status))
            else:
                out.extend(AlignedRow(i, None, "deleted") for i in range(block.a_start,
                                                                          block.a_end))
                out.extend(AlignedRow(None, j, "inserted") for j in range(block.b_start,
                                                                           block.b_end))
        return out

    def partner(self, side: str, index: int) -> int | None:
        """The aligned step on the other side of step ``index`` of ``side`` (``"a"``/``"b"``),
        or None when it has none (one-sided stretch)."""
        for block in self.blocks:
            start, end = (block.a_start, block.a_end) if side == "a" else (block.b_start,
                                                                           block.b_end)
            if start <= index < end:
                if block.tag != "equal":
                    return None
                offset = index - start
                return (block.b_start if side == "a" else block.a_start) + offset
        return None

    def to_json(self) -> dict[str, Any]:
        inputs = None
        if self.inputs is not None:
            inputs = [{"frame": frame, **var.to_json()} for frame, var in self.inputs.variables()]
        return {"identical": self.identical, "counts": self.counts(), "inputs": inputs,
                "approximate": self.approximate, "partial": self.partial,
                "notes": list(self.notes),
                "first_divergence": (self.first_divergence.to_json()
                                     if self.first_divergence else None),
                "blocks": [{"tag": b.tag, "a_start": b.a_start, "a_end": b.a_end,
                            "b_start": b.b_start, "b_end": b.b_end} for b in self.blocks],
                "regions": [r.to_json() for r in self.regions],
                "more_regions": self.more_regions}


def diff_runs(a: Run, b: Run, *, options: DiffOptions | None = None, max_regions: int = 20,
              time_limit: float = 60.0, strict: bool = False,
              progress: Callable[[int, int], None] | None = None, fast: bool = True) -> RunDiff:
    """Align runs ``a`` and ``b`` and report their first divergence and divergent regions.

    ``max_regions`` bounds the regions given a step diff (the rest are counted in
    ``more_regions``); ``time_limit`` (seconds) bounds the state comparison of aligned steps —
    past it the result is ``partial`` and says from which step on it was not examined;
    ``strict`` counts input differences as divergence (see the module docstring);
    ``progress(done, total)`` is told how many steps of A have been compared. ``fast=False``
    asks ``StepDiffer.same_state`` about every aligned pair, one at a time (the reference the
    default's ``state_match.PairMatcher`` is tested against: same result, ~10x the time).
    """
    differ = StepDiffer(options)
    signatures_a = [signature(s) for s in a.steps.summaries(0, len(a.steps))]
    signatures_b = [signature(s) for s in b.steps.summaries(0, len(b.steps))]
    steps_a, steps_b = StepPages(a.steps, len(signatures_a)), StepPages(b.steps,
                                                                         len(signatures_b))
    blocks, approximate = align(signatures_a, signatures_b)
    result = RunDiff(a, b, blocks, None, [], approximate=approximate, a_steps=steps_a,
                     b_steps=steps_b, differ=differ)
    if approximate:
        result.notes.append("runs too long to align in one piece: aligned in windows")
    known: set[tuple] = set()
    known_refs: set[tuple] = set()
    if not strict and blocks and blocks[0].tag == "equal" and blocks[0].a_start == 0:
        start = differ.diff(steps_a[0], steps_b[0])
        if not start.identical:
            result.inputs = start
            for frame, var in start.variables():
                known |= change_keys(frame, var)
            known_refs = input_refs(steps_a[0], steps_b[0], start)
    result.input_keys = frozenset(known)
    budget = Budget(time_limit)
    matcher = PairMatcher(differ, a.timeline, b.timeline, known, known_refs) if fast else None
    raw_regions: list[Region] = []
    for block in blocks:
        if block.tag != "equal":
            raw_regions.append(Region({"insert": "inserted", "delete": "deleted"}.get(
                block.tag, "replaced"), block.a_start, block.a_end, block.b_start, block.b_end))
            continue
        current: Region | None = None
        count = block.a_end - block.a_start
        verdicts = (matcher.verdicts((a, b), (steps_a, steps_b), block.a_start, block.b_start,
                                     count) if matcher is not None else repeat(None))
        for offset, verdict in zip(range(count), verdicts):
            if budget.expired():
                result.checked_to = block.a_start + offset
                result.partial = True
                result.notes.append(f"partial: states from step {block.a_start + offset} of A "
                                    f"on were not compared (time limit {time_limit:g} s)")
                break
            i, j = block.a_start + offset, block.b_start + offset
            if progress is not None and not i % 256:
                progress(i, len(steps_a))
            if verdict is None:  # undecided by the matcher (or no matcher): ask the differ
                verdict = differ.same_state(steps_a[i], steps_b[j], known, known_refs)
            if verdict:
                current = None
            elif current is None:
                current = Region("state", i, i + 1, j, j + 1)
                raw_regions.append(current)
            else:
                current.a_end, current.b_end = i + 1, j + 1
        if result.partial:
            break
    for region in raw_regions[:max_regions]:
        found = region_diff(differ, region, steps_a, steps_b)
        region.diff = without(found, known) if found is not None else None
        found = last_diff(differ, region, steps_a, steps_b)
        if found is not None and not (found := without(found, known)).identical:
            region.last_diff = found
    result.regions = raw_regions[:max_regions]
    result.regions_all = raw_regions
    result.more_regions = max(len(raw_regions) - max_regions, 0)
    if raw_regions:
        result.first_divergence = first_divergence(raw_regions[0], steps_a, steps_b)
    return result
