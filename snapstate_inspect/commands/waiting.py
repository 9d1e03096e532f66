"""``snapstate waiting [FILE|DIR...] [--json]``: the runs that wait for an answer or sleep until
a due time, across timeline files (directories are searched for ``*.snap``; default: the
current directory)."""

from __future__ import annotations

import argparse
import sys

from snapstate_capture import SnapStateError, open_timeline
from snapstate_capture.durable.worker import timeline_files

from ..model.waits import clock, open_pauses
from ..safe_text import escape_controls, plain
from .common import console, print_json


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "waiting", help="list the runs waiting for an answer or sleeping, across files",
        description="List every run that waits for an answer (with its prompt) or sleeps "
                    "until a due time and was not continued yet, in the given timeline files "
                    "and directories (searched for *.snap; default: the current directory).")
    parser.add_argument("targets", nargs="*", metavar="FILE|DIR", default=["."])
    parser.add_argument("--json", action="store_true", help="print JSON (stable form)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    files = timeline_files(args.targets)
    rows, problems = [], []
    for path in files:
        try:
            with open_timeline(path) as timeline:
                rows.extend((str(timeline.path), pause)
                            for pause in open_pauses(timeline.runs))
        except SnapStateError as exc:
            if len(files) == 1 and len(args.targets) == 1 and str(args.targets[0]) == str(path):
                raise
            problems.append(str(exc))
    for problem in problems:  # a directory may hold a damaged or foreign file: say, go on
        sys.stderr.write(f"snapstate: skipped {escape_controls(problem, keep_newlines=False)}\n")
    if args.json:
        print_json({"waiting": [{"file": f, "run": p.run.id, "name": p.run.name,
                                 "kind": p.kind, "wait": p.name, "prompt": p.prompt,
                                 "due": p.due, "schema": p.schema,
                                 "since": (p.run.pause or {}).get("at")} for f, p in rows]})
        return 0
    out = console()
    if not rows:
        out.print(f"no waiting or sleeping runs in {len(files)} file(s)")
        return 0
    for path, pause in rows:  # two lines each: they stay readable at any width
        since = (pause.run.pause or {}).get("at")
        when = f" since {clock(float(since))}" if isinstance(since, (int, float)) else ""
        if pause.kind == "wait":
            head = f"{path}  {pause.run.id[:8]}  {pause.run.name}  waiting for {pause.name!r}"
        else:
            due = clock(pause.due) if pause.due else "?"
            head = f"{path}  {pause.run.id[:8]}  {pause.run.name}  sleeping until {due}"
        out.print(plain(head + when, "bold"), soft_wrap=True)
        if pause.prompt:
            out.print(plain(f"    {' '.join(pause.prompt.split())}"), soft_wrap=True)
    return 0
