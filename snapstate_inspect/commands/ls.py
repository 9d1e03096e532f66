"""``snapstate ls FILE [--json]``: the runs in a timeline file."""

from __future__ import annotations

import argparse
import datetime as dt

from rich.table import Table

from ..model.records import run_json
from ..model.waits import pause_text
from ..safe_text import plain
from .common import add_file_argument, console, open_file, print_json

STATUS_STYLE = {"finished": "green", "failed": "red", "crashed": "bold red", "running": "yellow",
                "waiting": "bold magenta", "sleeping": "bold blue"}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("ls", help="list the runs in a timeline file",
                            description="List the runs in FILE: id, name, status, steps, start, "
                                        "duration, parent (for forks and continuations) "
                                        "and what a waiting or sleeping run waits for.")
    add_file_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON (stable form)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with open_file(args.file) as timeline:
        runs = timeline.runs
        if args.json:
            print_json({"file": str(timeline.path), "runs": [run_json(r) for r in runs]})
            return 0
        table = Table(title=None, box=None, pad_edge=False, header_style="bold")
        for column in ("run", "name", "status", "steps", "started", "duration", "parent"):
            table.add_column(column, justify="right" if column == "steps" else "left")
        present = {r.id for r in runs}
        for r in runs:
            parent = f"{r.parent.run_id[:8]}@{r.parent.step}" if r.parent else ""
            if r.parent and r.parent.run_id not in present:  # removed since (gc --keep-runs)
                parent += " (gone)"
            started = dt.datetime.fromtimestamp(r.started).strftime("%Y-%m-%d %H:%M:%S")
            duration = f"{r.duration:.2f}s" if r.duration is not None else ""
            table.add_row(r.id[:8], plain(r.name), plain(r.status, STATUS_STYLE.get(r.status, "")),
                          str(r.step_count), started, duration, parent)
        out = console()
        if not runs:
            out.print(f"{timeline.path}: no runs")
        else:
            out.print(table)
            for r in runs:  # what each paused run waits for, under the table (any width)
                if r.pause is not None:
                    out.print(plain(f"{r.id[:8]} {pause_text(r, limit=200)}",
                                    "dim" if r.continued_as else ""), soft_wrap=True)
    return 0
