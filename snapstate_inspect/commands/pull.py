"""``snapstate pull URL --run ID -o FILE``: copy a run from a shared store into a timeline file.

The file (created when missing) is a self-contained timeline like any other; hashes and
signatures are checked at both ends (``snapstate_capture.trust.transfer``).
"""

from __future__ import annotations

import argparse

from snapstate_capture.trust.transfer import copy_run

from ..progress import add_quiet_argument, bar as progress_bar
from .common import run_prefix
from .push import describe


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("pull", help="copy a run from a store into a file",
                            description="Copy one run of the store at URL into FILE (created "
                                        "when missing), checked at both ends.")
    parser.add_argument("url", metavar="URL", help="the store (postgresql://…) or another file")
    parser.add_argument("--run", metavar="ID", required=True, type=run_prefix,
                        help="run id or unique prefix")
    parser.add_argument("-o", "--output", metavar="FILE", required=True,
                        help="the timeline file to copy it into")
    add_quiet_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with progress_bar("pulling", quiet=args.quiet, unit="steps+blobs") as update:
        report = copy_run(args.url, args.output, run_id=args.run, progress=update)
    print(describe(report, "pulled"))
    return 0
