"""``snapstate resume FILE [--run ID] [--trust] [--allow-drift] [--json]``: continue a crashed
or interrupted run — replay it to its last recorded step, then go on live as a fork."""

from __future__ import annotations

import argparse

from snapstate_capture import SnapStateError

from .common import add_file_argument, add_run_argument, open_file
from .replay import add_common_arguments, replay_and_report

#: Exceptions that mean "interrupted" rather than "failed" for a run stored as failed.
INTERRUPTS = ("KeyboardInterrupt", "SystemExit")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "resume", help="continue a crashed or interrupted run as a live fork",
        description="Replay a crashed or interrupted run to its last recorded step (effects "
                    "served from the journal), then continue live as a fork in the same file.")
    add_file_argument(parser)
    add_run_argument(parser)
    add_common_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with open_file(args.file, trust=args.trust) as timeline:
        chosen = timeline.run(args.run)
        error_type = str((chosen.error or {}).get("type", "")).rsplit(".", 1)[-1]
        interrupted = chosen.status == "failed" and error_type in INTERRUPTS
        if chosen.status == "running":
            raise SnapStateError(f"{timeline.path}: run {chosen.id[:8]} is still running "
                                 f"(pid {chosen.pid})")
        if chosen.status != "crashed" and not interrupted:
            raise SnapStateError(f"{timeline.path}: run {chosen.id[:8]} {chosen.status}; only a "
                                 "crashed or interrupted run can be resumed (use `snapstate "
                                 "replay --to N --live` to fork it)")
        count = len(chosen.steps)
        if count == 0:
            raise SnapStateError(f"{timeline.path}: run {chosen.id[:8]} has no steps to "
                                 "resume from")
        last = count - 1
        if interrupted:
            last = max(count - 2, 0)  # the last step is the interrupt's own exception step
        return replay_and_report(timeline, chosen, args, to=last, mode="live", live_effects=[])
