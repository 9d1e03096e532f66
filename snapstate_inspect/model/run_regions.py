"""The parts of a run diff (``alignment.diff_runs``): where two runs first differ, each
divergent region with the step diff shown for it, and the rows of the two runs side by side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from snapstate_capture import Step

from .diff import STEP_VALUES, StepDiff, StepDiffer


@dataclass
class Divergence:
    """Where two runs first differ: step indices on each side (None where that side has no
    step there), ``reason`` (``state`` or ``sequence``), a human ``message`` and the step diff
    at that point (when both sides have a step)."""

    a_step: int | None
    b_step: int | None
    reason: str
    message: str
    diff: StepDiff | None = None

    def to_json(self) -> dict[str, Any]:
        variables = []
        if self.diff is not None:
            variables = [{"frame": frame, "name": var.name, "status": var.status}
                         for frame, var in self.diff.variables()]
        return {"a_step": self.a_step, "b_step": self.b_step, "reason": self.reason,
                "message": self.message, "variables": variables}


@dataclass
class Region:
    """A divergent stretch: ``kind`` ``state`` (aligned steps whose state differs),
    ``inserted`` (steps only in B), ``deleted`` (only in A) or ``replaced``; half-open ranges;
    ``diff`` is the variable diff at its start (see the module docstring); ``last_diff``, of a
    ``state`` region of more than one step, the one at its last step: what the divergence
    came to (a result that differs where the first step showed only its cause)."""

    kind: str
    a_start: int
    a_end: int
    b_start: int
    b_end: int
    diff: StepDiff | None = None
    last_diff: StepDiff | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "a_start": self.a_start, "a_end": self.a_end,
                "b_start": self.b_start, "b_end": self.b_end,
                "diff": self.diff.to_json() if self.diff is not None else None,
                "last_diff": self.last_diff.to_json() if self.last_diff is not None else None}


@dataclass(frozen=True)
class AlignedRow:
    """One row of two runs side by side: step indices (None on the side without a step)."""

    a: int | None
    b: int | None
    status: str



def input_refs(a: Step, b: Step, start: StepDiff) -> set[tuple]:
    """``(frame, name, digest_a, digest_b)`` of each input variable that differs at the first
    pair: where the same content pair appears later, it is the same input difference."""
    out: set[tuple] = set()
    for frame in start.frames:
        if frame.a_index is None or frame.b_index is None:
            continue
        locals_a, locals_b = a.frames[frame.a_index].locals, b.frames[frame.b_index].locals
        for var in frame.variables:
            if var.name in locals_a and var.name in locals_b:
                out.add((frame.function, var.name, locals_a[var.name].digest,
                         locals_b[var.name].digest))
    for var in start.extra:
        if var.name in a.extra and var.name in b.extra:
            out.add((STEP_VALUES, var.name, a.extra[var.name].digest, b.extra[var.name].digest))
    return out


def region_diff(differ: StepDiffer, region: Region, steps_a: Sequence[Step],
                 steps_b: Sequence[Step]
                 ) -> StepDiff | None:
    """The diff shown for a region: its first pair; for a one-sided stretch, the state after
    the stretch against the other run at the same point."""
    if not steps_a or not steps_b:
        return None
    if region.kind in ("state", "replaced"):
        i, j = region.a_start, region.b_start
    elif region.kind == "inserted":
        i, j = max(region.a_start - 1, 0), region.b_end - 1
    else:
        i, j = region.a_end - 1, max(region.b_start - 1, 0)
    return differ.diff(steps_a[min(i, len(steps_a) - 1)], steps_b[min(j, len(steps_b) - 1)])


def last_diff(differ: StepDiffer, region: Region, steps_a: Sequence[Step],
              steps_b: Sequence[Step]) -> StepDiff | None:
    """The diff at the last aligned pair of a ``state`` region of more than one step; None
    for any other region."""
    if region.kind != "state" or region.a_end - region.a_start < 2:
        return None
    return differ.diff(steps_a[region.a_end - 1], steps_b[region.b_end - 1])


def first_divergence(region: Region, steps_a: Sequence[Step], steps_b: Sequence[Step]) -> Divergence:
    a_step = region.a_start if region.a_start < len(steps_a) else None
    b_step = region.b_start if region.b_start < len(steps_b) else None
    if region.kind == "state":
        # each name once: the same variable differs in every frame that holds it
        names = ", ".join(dict.fromkeys(var.name for _, var in region.diff.variables())
                          ) if region.diff else ""
        message = f"step {a_step} of A and step {b_step} of B differ in state" + (
            f": {names}" if names else "")
        return Divergence(a_step, b_step, "state", message, region.diff)
    if region.kind == "inserted":
        message = (f"B has {region.b_end - region.b_start} step(s) not in A from step {b_step}"
                   + ("" if a_step is not None else " (A ended)"))
    elif region.kind == "deleted":
        message = (f"A has {region.a_end - region.a_start} step(s) not in B from step {a_step}"
                   + ("" if b_step is not None else " (B ended)"))
    else:
        message = (f"the runs take different steps: A {region.a_start}-{region.a_end - 1}, "
                   f"B {region.b_start}-{region.b_end - 1}")
    return Divergence(a_step, b_step, "sequence", message,
                      region.diff if region.kind == "replaced" else None)
