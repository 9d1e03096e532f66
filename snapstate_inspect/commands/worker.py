"""``snapstate worker [FILE|DIR...] [--once] [--answers-from DIR] [--interval S] [--trust]
[--allow-drift]``: resume every sleeping run that is due (and, with ``--answers-from``, every
waiting run whose answer file arrived), one log line per resume
(``snapstate_capture.durable.worker``). Runs until interrupted; ``--once`` makes one pass."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from snapstate_capture.durable.worker import DEFAULT_INTERVAL, Event, serve, timeline_files

from ..safe_text import escape_controls


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "worker", help="resume runs whose due time or answer has come",
        description="Wake every sleeping run whose due time has passed and, with "
                    "--answers-from DIR, answer every waiting run for which DIR holds "
                    "<run id prefix>.json (JSON) or .txt (text); used answers move to "
                    "DIR/done/, refused ones to DIR/refused/. One log line per resume. Files "
                    "and directories (searched for *.snap) are re-listed at every pass.")
    parser.add_argument("targets", nargs="*", metavar="FILE|DIR", default=["."])
    parser.add_argument("--once", action="store_true",
                        help="one pass, then exit (code 1 when a file or a resume failed)")
    parser.add_argument("--answers-from", metavar="DIR", type=Path, default=None)
    parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL, metavar="S",
                        help=f"seconds between passes (default {DEFAULT_INTERVAL:g})")
    parser.add_argument("--trust", action="store_true",
                        help="resume runs not signed with your key (loads their payloads)")
    parser.add_argument("--allow-drift", action="store_true",
                        help="resume although source files changed since the recording")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    timeline_files(args.targets)  # a target that does not exist: the one-line error now
    failed = []

    def log(event: Event) -> None:
        sys.stdout.write(escape_controls(event.line(), keep_newlines=False) + "\n")
        sys.stdout.flush()
        if event.action == "failed":
            failed.append(event)

    if not args.once:  # it may sit silent for hours: say once that it is there
        sys.stderr.write(f"snapstate worker: looking at {', '.join(map(str, args.targets))} "
                         f"every {max(args.interval, 0.1):g} s (Ctrl-C stops)\n")
        sys.stderr.flush()
    serve(lambda: timeline_files(args.targets), answers=args.answers_from, trust=args.trust,
          allow_drift=args.allow_drift, interval=max(args.interval, 0.1), once=args.once,
          log=log)
    return 1 if failed else 0
