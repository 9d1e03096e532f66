"""``snapstate waiting [FILE|DIR...] [--json]``: the runs that wait for an answer or sleep until
a due time, across timeline files (directories are searched for ``*.snap``; default: the
current directory)."""

from __future__ import annotations

import argparse
import sys

from rich.table import Table

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
                rows.extend((str(path), pause) for pause in open_pauses(timeline.runs))
        except SnapStateError as exc:
            if len(files) == 1 and len(args.targets) == 1 and args.targets[0] == str(path):
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
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("file", "run", "name", "status", "waits for", "since"):
        table.add_column(column, overflow="fold")
    for path, pause in rows:
        since = (pause.run.pause or {}).get("at")
        if pause.kind == "wait":
            what = plain(f"{pause.name!r}" + (f": {pause.prompt}" if pause.prompt else ""))
        else:
            what = plain(f"until {clock(pause.due) if pause.due else '?'}"
                         + (f" ({pause.prompt})" if pause.prompt else ""))
        table.add_row(plain(path), pause.run.id[:8], plain(pause.run.name),
                      plain(pause.run.status), what,
                      clock(float(since)) if isinstance(since, (int, float)) else "")
    out.print(table)
    return 0
