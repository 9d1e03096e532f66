"""``snapstate inspect FILE [FILE2]`` (also ``snapstate FILE``): the time-travel inspector.

The files are opened (and checked) before the app starts, so a bad file gives the CLI's one-line
error with exit code 2, never a traceback or a half-drawn screen.
"""

from __future__ import annotations

import argparse

from snapstate_capture import NotFoundError
from snapstate_capture.store.locations import settle

from .common import add_file_argument, add_run_argument, open_file, pick_step


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("inspect", help="browse a timeline in the terminal inspector",
                            description="Open FILE in the inspector: timeline, stack, source and "
                                        "variables of every step. FILE2, if given, is opened "
                                        "for comparison.")
    add_file_argument(parser)
    parser.add_argument("file2", metavar="FILE2", nargs="?", default=None,
                        help="a second timeline to compare with")
    add_run_argument(parser)
    parser.add_argument("--step", type=int, default=None, metavar="N",
                        help="step to show first (negative counts from the end; default 0)")
    parser.add_argument("--trust", action="store_true",
                        help="trust FILE for fork and replay check although its runs are not "
                             "signed with your key (replay runs code from the file)")
    parser.add_argument("--compare", metavar="ID", default=None,
                        help="open the run comparison against run ID (of FILE2, or of FILE); "
                             "with FILE2 alone, its last run is compared")
    parser.add_argument("--follow", action=argparse.BooleanOptionalAction, default=None,
                        help="follow a recording in progress (default: on for running runs)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    reader = open_file(args.file)
    other = None
    try:
        # One run is read, not the whole list (a store may hold 100,000 runs).
        chosen = _chosen_run(reader, args.run)  # unknown --run: the one-line error, up front
        if chosen is not None and args.step is not None and chosen.status != "running":
            pick_step(reader, chosen, args.step)  # likewise a --step out of range
        if args.file2:
            other = open_file(args.file2)
            _chosen_run(other, None)
        if args.compare:
            (other or reader).run(args.compare)  # unknown id: the one-line error, up front
        from ..app import SnapStateApp

        app = SnapStateApp(reader, other=other, run_id=args.run, step=args.step,
                           follow=args.follow, compare_run=args.compare)
        app.trust = args.trust  # fork here / replay check (screens/replay.py)
        app.run()
        return int(app.return_code or 0)
    finally:
        reader.close()
        if other is not None:
            other.close()
        settle(args.file)  # a fork made here (``f``): its steps, folded into the file


def _chosen_run(reader, run_id):
    """Run ``run_id`` of ``reader`` (the newest when None; None in an empty file)."""
    try:
        return reader.run(run_id)
    except NotFoundError:
        if run_id:
            raise
        return None
