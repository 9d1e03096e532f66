"""``snapstate export FILE [--run ID] --step N -o OUT.snap``: one step as a standalone file.

The new file holds one run of one step with the same stack, sources and values (previews and
payloads copied byte for byte), so it opens everywhere the original did (``show``, ``inspect``,
``diff``, ``verify``).
"""

from __future__ import annotations

import argparse

from snapstate_capture.store.maintenance import export_step

from .common import add_file_argument, add_run_argument, print_json


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "export", help="write one step as a standalone .snap file",
        description="Write step N of a run as a new timeline file of one run and one step: "
                    "stack, sources, previews and payloads.")
    add_file_argument(parser)
    add_run_argument(parser)
    parser.add_argument("--step", type=int, required=True, metavar="N",
                        help="step index (negative counts from the end)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="the new file (must not exist)")
    parser.add_argument("--json", action="store_true", help="print JSON (stable form)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    report = export_step(args.file, args.output, run_id=args.run, step=args.step)
    if args.json:
        print_json({"file": report.path, "run": report.run_id, "step": report.step,
                    "blobs": report.blobs, "blob_bytes": report.blob_bytes})
    else:
        print(f"{report.path}: step {report.step} written as run {report.run_id[:8]} "
              f"({report.blobs} blobs, {report.blob_bytes / 1000:.1f} kB)")
    return 0
