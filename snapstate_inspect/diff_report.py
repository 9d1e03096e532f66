"""The reports of ``snapstate diff``: its stable JSON form and its readable text.

The JSON shape is documented in ``commands/diff.py``. Kept apart from the command's argument
parsing so that ``snapstate`` starts without importing deepdiff (a second on a loaded machine).
"""

from __future__ import annotations

import shlex
from typing import Any

from rich.console import Group
from rich.text import Text

from snapstate_capture import Run, Step, Timeline

from .diff_text import render_step_diff, step_title
from .model.alignment import RunDiff
from .model.diff import StepDiff
from .model.run_facts import fact_changes
from .safe_text import plain


# --- JSON -------------------------------------------------------------------------------------

def side_json(timeline: Timeline, run_: Run, step: Step | None) -> dict[str, Any]:
    return {"file": str(timeline.path), "run": run_.id, "run_name": run_.name,
            "steps": run_.step_count, "step": step.index if step is not None else None}


def step_report_json(result: StepDiff, ta: Timeline, ra: Run, tb: Timeline, rb: Run
                     ) -> dict[str, Any]:
    first = None
    if not result.identical:
        first = {"a_step": result.a.index, "b_step": result.b.index, "reason": "state",
                 "message": f"step {result.a.index} of A and step {result.b.index} of B differ",
                 "variables": [{"frame": frame, "name": var.name, "status": var.status}
                               for frame, var in result.variables()]}
    return {"kind": "steps", "identical": result.identical, "mode": result.mode,
            "partial": result.partial, "notes": list(result.notes),
            "a": side_json(ta, ra, result.a), "b": side_json(tb, rb, result.b),
            "first_divergence": first, "diff": result.to_json()}


def run_report_json(result: RunDiff, ta: Timeline, tb: Timeline) -> dict[str, Any]:
    body = result.to_json()
    return {"kind": "runs", "identical": body.pop("identical"),
            "started_with": [change.to_json() for change in fact_changes(result.a, result.b)],
            "mode": "full" if any(r.diff and r.diff.mode == "full" for r in result.regions)
            else "preview",
            "partial": body.pop("partial"), "notes": body.pop("notes"),
            "a": side_json(ta, result.a, None), "b": side_json(tb, result.b, None), **body}


# --- the readable report ----------------------------------------------------------------------

def render_step_report(result: StepDiff, ta: Timeline, ra: Run, tb: Timeline, rb: Run) -> Group:
    parts: list[Any] = [_side_line("A", ta, ra, result.a), _side_line("B", tb, rb, result.b)]
    parts.extend(render_step_diff(result))
    parts.append(_verdict(not result.identical, result.partial))
    return Group(*parts)


def _side_line(name: str, timeline: Timeline, run_: Run, step: Step | None) -> Text:
    text = Text(f"{name}: ", style="bold")
    text.append_text(plain(f"{timeline.path}  run {run_.id[:8]} ({run_.name}, "
                           f"{run_.step_count} steps)"))
    if step is not None:
        text.append("  ")
        text.append_text(step_title(step))
    return text


def _verdict(found: bool, partial: bool) -> Text:
    """The last line: ``different`` only when a difference was found; a partial diff that found
    none says so, rather than "identical" (it did not look at everything) or "different"."""
    if found:
        return Text("different" + (" (partial diff)" if partial else ""), style="bold red")
    if partial:
        return Text("no difference found in the part compared (partial diff)",
                    style="bold yellow")
    return Text("identical", style="bold green")


def render_run_report(result: RunDiff, ta: Timeline, tb: Timeline) -> Group:
    counts = result.counts()
    parts: list[Any] = [_side_line("A", ta, result.a, None), _side_line("B", tb, result.b, None),
                        Text(f"aligned: {counts['matched']} steps matched, {counts['inserted']} "
                             f"only in B, {counts['deleted']} only in A", style="dim")]
    changes = fact_changes(result.a, result.b)
    if changes:
        parts.append(Text("started with:", style="bold"))
        for change in changes:
            row = Text(f"  {change.name}: ")
            row.append_text(plain(f"{_fact(change.a)} → {_fact(change.b)}"))
            parts.append(row)
    if result.inputs is not None:
        parts.append(Text("inputs: the runs start with these differences (set aside below; "
                          "--strict counts them)", style="bold"))
        parts.extend(render_step_diff(result.inputs, indent="  "))
    first = result.first_divergence
    if first is None and result.inputs is not None:
        parts.append(Text("no divergence beyond the inputs", style="bold"))
    if first is not None:
        head = Text("first divergence: ", style="bold red")
        head.append_text(plain(first.message, "bold"))
        parts.append(head)
        for label, steps, index in (("A", result.a_steps, first.a_step),
                                    ("B", result.b_steps, first.b_step)):
            if index is not None:
                row = Text(f"  {label} ")
                row.append_text(step_title(steps[index]))
                parts.append(row)
        if first.diff is not None:
            parts.extend(render_step_diff(first.diff, indent="  "))
    total = len(result.regions) + result.more_regions
    for number, region in enumerate(result.regions):
        parts.append(Text(""))  # a long report: each region starts after a blank line
        parts.append(_region_title(region, result, number + 1, total))
        if number == 0 and first is not None and first.diff is region.diff:
            parts.append(Text("    (its first step's changes: the first divergence above)",
                              style="dim"))
        elif region.diff is not None:
            parts.extend(render_step_diff(region.diff, indent="    "))
        if region.last_diff is not None:
            parts.append(Text(f"    at its last step (A {region.a_end - 1}, B "
                              f"{region.b_end - 1}):", style="dim"))
            parts.extend(render_step_diff(region.last_diff, indent="    "))
    if result.more_regions:
        parts.append(Text(f"… {result.more_regions} more divergent regions (--max-regions)",
                          style="dim"))
    parts.extend(plain(note, "yellow") for note in result.notes)
    parts.append(_verdict(result.first_divergence is not None or result.inputs is not None,
                          result.partial))
    return Group(*parts)


def _fact(value: Any) -> str:
    """A fact's value as the report shows it (``(none)`` where a run does not say)."""
    if value is None or value == []:
        return "(none)"
    return shlex.join(value) if isinstance(value, list) and all(
        isinstance(v, str) for v in value) else str(value)


def _region_title(region: Any, result: RunDiff, number: int, total: int) -> Text:
    """``region N of TOTAL  KIND  A a-b B c-d  (the steps only one run has)``: numbered, so
    the regions of a long report can be told apart and counted."""
    def span(start: int, end: int) -> str:
        return f"{start}" if end - start == 1 else f"{start}-{end - 1}"
    text = Text(f"region {number} of {total}  ", style="bold")
    text.append(f"{region.kind:<9}", style={"state": "yellow", "inserted": "green",
                                            "deleted": "red"}.get(region.kind, "magenta"))
    if region.a_end > region.a_start:
        text.append(f" A {span(region.a_start, region.a_end)}")
    if region.b_end > region.b_start:
        text.append(f" B {span(region.b_start, region.b_end)}")
    if region.kind in ("inserted", "deleted", "replaced"):
        steps = (result.b_steps[region.b_start:region.b_end] if region.kind == "inserted"
                 else result.a_steps[region.a_start:region.a_end])
        labels = ", ".join(f"{s.kind} {s.label or s.function}" for s in steps[:4])
        text.append_text(plain(f"  ({labels}{', …' if len(steps) > 4 else ''})", "dim"))
    return text
