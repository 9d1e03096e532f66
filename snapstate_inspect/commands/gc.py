"""``snapstate gc FILE [--keep-runs N] [--older-than 7d] [--max-size 500MB] [--dry-run]``.

Removes whole runs chosen by the options, then every blob no kept run refers to, then compacts the
file (VACUUM), and prints what it freed. A kept fork never loses what it needs: forks copy their
parent's steps, and blobs stay while anything kept names them (``store/maintenance.py``).
"""

from __future__ import annotations

import argparse

from snapstate_capture import SnapStateError
from snapstate_capture.store.maintenance import (GcReport, collect_garbage, parse_duration,
                                                 parse_size)

from ..progress import add_quiet_argument, bar as progress_bar
from .common import add_file_argument, print_json


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "gc", help="remove old runs and unreferenced data, then compact the file",
        description="Remove whole runs (the oldest beyond --keep-runs, those older than "
                    "--older-than, the oldest until the data fits --max-size), then every blob "
                    "no kept run refers to, then compact the file. Without options only "
                    "unreferenced blobs are removed. Runs still being recorded are never "
                    "touched.")
    add_file_argument(parser)
    parser.add_argument("--keep-runs", type=int, metavar="N", help="keep the N newest runs")
    parser.add_argument("--older-than", metavar="AGE",
                        help="remove runs that ended more than AGE ago (30m, 12h, 7d, 2w)")
    parser.add_argument("--max-size", metavar="SIZE",
                        help="remove the oldest runs until the data fits SIZE (500MB, 2GB)")
    parser.add_argument("--dry-run", action="store_true", help="say what would go; change nothing")
    parser.add_argument("--json", action="store_true", help="print JSON (stable form)")
    add_quiet_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.keep_runs is not None and args.keep_runs < 0:
        raise SnapStateError(f"{args.file}: --keep-runs must be 0 or more")
    try:
        older = parse_duration(args.older_than) if args.older_than else None
        size = parse_size(args.max_size) if args.max_size else None
    except ValueError as exc:
        raise SnapStateError(f"{args.file}: {exc}") from None
    with progress_bar("collecting", quiet=args.quiet or args.json, unit="") as update:
        report = collect_garbage(args.file, keep_runs=args.keep_runs, older_than=older,
                                 max_size=size, dry_run=args.dry_run, progress=update)
    if args.json:
        print_json(report_json(report))
    else:
        print(describe(args.file, report))
    return 0


def report_json(report: GcReport) -> dict:
    """The stable JSON form of a gc report."""
    return {"dry_run": report.dry_run,
            "removed_runs": [{"id": i, "name": n, "steps": s} for i, n, s in report.removed_runs],
            "kept_paused": [{"id": i, "name": n, "status": st} for i, n, st in report.kept_paused],
            "removed_blobs": report.removed_blobs, "freed_blob_bytes": report.freed_blob_bytes,
            "size_before": report.size_before, "size_after": report.size_after}


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"


def describe(path: str, report: GcReport) -> str:
    """Human summary: runs removed, blobs removed, bytes freed."""
    verb = "would remove" if report.dry_run else "removed"
    runs = ", ".join(f"{i[:8]} ({n}, {s} steps)" for i, n, s in report.removed_runs) or "none"
    lines = [f"{path}: {verb} {len(report.removed_runs)} run(s): {runs}"]
    if report.kept_paused:
        kept = ", ".join(f"{i[:8]} ({n}, {st})" for i, n, st in report.kept_paused)
        lines.append(f"kept {len(report.kept_paused)} run(s) that wait for an answer or sleep "
                     f"(answer or wake them first): {kept}")
    lines.append(f"{verb} {report.removed_blobs} unreferenced blob(s), "
                 f"{_size(report.freed_blob_bytes)} of stored data")
    if report.size_after is not None:
        lines.append(f"file {_size(report.size_before)} -> {_size(report.size_after)} "
                     f"(freed {_size(max(report.size_before - report.size_after, 0))})")
    return "\n".join(lines)
