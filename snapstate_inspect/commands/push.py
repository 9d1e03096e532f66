"""``snapstate push FILE URL [--run ID]``: copy a run from a timeline file into a shared store.

Hashes and signatures are checked at both ends (``snapstate_capture.trust.transfer``); pushing
a run that is already there is a no-op.
"""

from __future__ import annotations

import argparse

from snapstate_capture.trust.transfer import copy_run

from ..progress import add_quiet_argument, bar as progress_bar
from .common import add_run_argument


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("push", help="copy a run from a file into a store (postgresql://…)",
                            description="Copy one run — steps, trace chunks, effect journal and "
                                        "every blob it uses — from FILE into the store at URL, "
                                        "checked at both ends. Pushing it again does nothing.")
    parser.add_argument("file", metavar="FILE", help="the timeline file the run is in")
    parser.add_argument("url", metavar="URL", help="the store (postgresql://…) or another file")
    add_run_argument(parser)
    add_quiet_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with progress_bar("pushing", quiet=args.quiet, unit="steps+blobs") as update:
        report = copy_run(args.file, args.url, run_id=args.run, progress=update)
    print(describe(report, "pushed"))
    return 0


def describe(report, verb: str) -> str:
    """One line saying what a copy did."""
    if not report.copied:
        return f"run {report.run_id[:8]} is already in {report.destination}: nothing to do"
    return (f"{verb} run {report.run_id[:8]}: {report.steps} steps, {report.blobs} blobs "
            f"({report.blob_bytes / 1000:.1f} kB) -> {report.destination}")
