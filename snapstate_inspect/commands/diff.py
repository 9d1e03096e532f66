"""``snapstate diff A B``: what changed between two steps, or where two runs diverge.

Sides (each a FILE followed by its own options)::

    snapstate diff A.snap B.snap                       # last run of each: run diff
    snapstate diff A.snap --run 1f3c B.snap --run 9a   # chosen runs (may be one file twice)
    snapstate diff A.snap --step 3 B.snap --step 5     # two steps: step diff
    snapstate diff A.snap --steps 3 4                  # two steps of one run

Exit code 0 when identical, 1 when different, 2 on error (like ``diff``). Previews are compared
(safe for any file); ``--full`` diffs loaded payloads instead, for runs signed with the user's
key or with ``--trust`` (DESIGN.md "Trust"); other values fall back to previews, with a note.

``--json`` prints one object (keys are only ever added, never renamed)::

    {"kind": "steps" | "runs", "identical": bool, "mode": "preview" | "full",
     "partial": bool, "notes": [str],
     "a": {"file", "run", "run_name", "steps", "step"}, "b": {...},     # step: int or null
     "first_divergence": null | {"a_step", "b_step", "reason": "state" | "sequence",
                                 "message", "variables": [{"frame", "name", "status"}]},
     # kind "steps":
     "diff": STEPDIFF,
     # kind "runs":
     "started_with": [{"fact", "a", "b"}],       # how the runs were started, where it differs:
                                                 # argv, program, cwd, python, hash seed, what
                                                 # was traced, "package NAME" (model/run_facts.py)
     "counts": {"matched", "inserted", "deleted"}, "approximate": bool,
     "inputs": null | [{"frame", **VARIABLE}],   # differences both runs start with (set aside
                                                 # unless --strict; see model/alignment.py)
     "blocks": [{"tag": "equal"|"insert"|"delete"|"replace", "a_start", "a_end",
                 "b_start", "b_end"}],
     "regions": [{"kind": "state"|"inserted"|"deleted"|"replaced", "a_start", "a_end",
                  "b_start", "b_end", "diff": STEPDIFF | null,
                  "last_diff": STEPDIFF | null}], "more_regions": int}

    STEPDIFF = {"a_step", "b_step", "identical", "mode", "partial", "notes",
                "frames": [{"function", "status": "same"|"changed"|"added"|"removed",
                            "a_index", "b_index", "a_lineno", "b_lineno",
                            "variables": [VARIABLE]}],
                "extra": [VARIABLE]}                       # the step's own values
    VARIABLE = {"name", "status": "added"|"removed"|"changed", "old": {"type", "repr"} | null,
                "new": {...} | null, "partial", "notes",
                "changes": [{"path", "kind": "changed"|"added"|"removed"|"type"|"len"|"hidden",
                             "old", "new", ("old_type", "new_type")}]}
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass


from snapstate_capture import SnapStateError, Timeline

from ..progress import add_quiet_argument, bar as progress_bar
from .common import console, open_file, pick_step, print_json

EXIT_SAME, EXIT_DIFFERENT = 0, 1


class DiffUsageError(SnapStateError):
    """Bad ``snapstate diff`` arguments (exit code 2)."""


@dataclass
class SideSpec:
    """One side as given on the command line: a file, maybe a run id, maybe a step index."""

    file: str
    run: str | None = None
    step: int | None = None


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "diff", allow_abbrev=False, help="diff two steps, or align two runs and find where they diverge",
        usage="snapstate diff A [--run ID] [--step N] B [--run ID] [--step N] [options]\n"
              "       snapstate diff FILE [--run ID] --steps N M [options]",
        description="Compare two steps (variables added, removed and changed, with paths "
                    "into values) or two runs (aligned step by step; the first divergence "
                    "and each divergent region). Each side is a FILE (its last run), "
                    "FILE --run ID, or FILE --step N. Exit 0 identical, 1 different, 2 error.")
    parser.add_argument("operands", nargs=argparse.REMAINDER, metavar="A [--run ID] [--step N] B",
                        help="the two sides, each FILE followed by its own --run / --step")
    add_global_options(parser)
    # --run/--step before any FILE: caught here so the error can say where they belong.
    parser.add_argument("--run", dest="early_run", help=argparse.SUPPRESS)
    parser.add_argument("--step", dest="early_step", help=argparse.SUPPRESS)
    parser.set_defaults(handler=run)


def add_global_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--steps", nargs=2, type=int, metavar=("N", "M"), default=None,
                        help="diff steps N and M of one file's run")
    parser.add_argument("--json", action="store_true", help="print JSON (stable form)")
    add_quiet_argument(parser)
    parser.add_argument("--full", action="store_true",
                        help="diff whole loaded values instead of previews (runs signed with "
                             "your key, or any run with --trust; others fall back to previews)")
    parser.add_argument("--trust", action="store_true",
                        help="allow loading payloads (runs code from the files)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="S",
                        help="seconds a diff may take before it stops as partial (default 5 "
                             "for a step diff, 60 for the state comparison of a run diff)")
    parser.add_argument("--max-regions", type=int, default=20, metavar="N",
                        help="divergent regions shown with their diff (default 20)")
    parser.add_argument("--strict", action="store_true",
                        help="run diff: count the differences both runs start with (inputs "
                             "such as arguments or paths) as the first divergence")


_FLAGS = {"--json": 0, "--full": 0, "--trust": 0, "--strict": 0, "--time-limit": 1,
          "--max-regions": 1, "--steps": 2}


def parse_operands(args: argparse.Namespace) -> list[SideSpec]:
    """Split ``args.operands`` into sides; global flags found among them are set on ``args``.

    Raises ``DiffUsageError`` for a misplaced or malformed option.
    """
    for option, value in (("--run", args.early_run), ("--step", args.early_step)):
        if value is not None:
            raise DiffUsageError(f"{option} must follow the FILE it applies to")
    sides: list[SideSpec] = []
    tokens = list(args.operands)
    while tokens:
        token = tokens.pop(0)
        if token in ("--run", "--step"):
            if not sides:
                raise DiffUsageError(f"{token} must follow the FILE it applies to")
            if not tokens:
                raise DiffUsageError(f"{token} needs a value")
            value = tokens.pop(0)
            if token == "--run":
                sides[-1].run = value
            else:
                sides[-1].step = _int(value, token)
        elif token.split("=", 1)[0] in _FLAGS:
            name, _, inline = token.partition("=")
            count = _FLAGS[name]
            values = ([inline] if inline else []) + [tokens.pop(0) for _ in
                                                       range(min(count - bool(inline),
                                                                 len(tokens)))]
            if len(values) != count:
                raise DiffUsageError(f"{name} needs {count} value(s)")
            _set_flag(args, name, values)
        elif token.startswith("-") and token != "-":
            raise DiffUsageError(f"unknown option {token}")
        else:
            sides.append(SideSpec(token))
    if args.steps is not None:
        if len(sides) != 1 or sides[0].step is not None:
            raise DiffUsageError("--steps N M takes exactly one FILE (without --step)")
        first = sides[0]
        return [SideSpec(first.file, first.run, args.steps[0]),
                SideSpec(first.file, first.run, args.steps[1])]
    if len(sides) != 2:
        raise DiffUsageError(f"expected two sides (A and B), got {len(sides)}")
    if (sides[0].step is None) != (sides[1].step is None):
        raise DiffUsageError("give --step on both sides (a step diff) or on neither (a run diff)")
    return sides


def _int(text: str, option: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise DiffUsageError(f"{option} needs an integer, got {text!r}") from None


def _set_flag(args: argparse.Namespace, name: str, values: list[str]) -> None:
    if name == "--steps":
        args.steps = [_int(v, name) for v in values]
    elif name == "--time-limit":
        try:
            args.time_limit = float(values[0])
        except ValueError:
            raise DiffUsageError(f"--time-limit needs a number, got {values[0]!r}") from None
    elif name == "--max-regions":
        args.max_regions = _int(values[0], name)
    else:
        setattr(args, name[2:], True)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: deepdiff costs the whole `snapstate` command a second of
    # start-up that `ls`, `show` and the rest should not pay.
    from ..diff_report import (render_run_report, render_step_report, run_report_json,
                               step_report_json)
    from ..model.alignment import diff_runs
    from ..model.diff import StepDiffer
    from ..model.value_diff import DiffOptions

    sides = parse_operands(args)
    if args.time_limit is not None and args.time_limit <= 0:
        raise DiffUsageError("--time-limit must be positive")
    options = DiffOptions(time_limit=args.time_limit or 5.0, full_values=args.full,
                          trust=args.trust)
    timelines: dict[str, Timeline] = {}
    try:
        opened = []
        for side in sides:
            if side.file not in timelines:
                timelines[side.file] = open_file(side.file, trust=args.trust)
            timeline = timelines[side.file]
            opened.append((timeline, timeline.run(side.run)))
        (ta, ra), (tb, rb) = opened
        if sides[0].step is not None:
            step_a = pick_step(ta, ra, sides[0].step)
            step_b = pick_step(tb, rb, sides[1].step)
            result = StepDiffer(options).diff(step_a, step_b)
            if args.json:
                print_json(step_report_json(result, ta, ra, tb, rb))
            else:
                console().print(render_step_report(result, ta, ra, tb, rb))
            return EXIT_SAME if result.identical else EXIT_DIFFERENT
        with progress_bar("comparing", quiet=args.quiet or args.json) as update:
            run_diff = diff_runs(ra, rb, options=options, max_regions=max(args.max_regions, 0),
                                 time_limit=args.time_limit or 60.0, strict=args.strict,
                                 progress=update)
        if args.json:
            print_json(run_report_json(run_diff, ta, tb))
        else:
            console().print(render_run_report(run_diff, ta, tb))
        return EXIT_SAME if run_diff.identical else EXIT_DIFFERENT
    finally:
        for timeline in timelines.values():
            timeline.close()
