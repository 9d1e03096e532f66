"""``snapstate replay FILE [--run ID] [--to N] [--pdb | --console | --debugpy [--listen
HOST:PORT] | --live] [--allow-drift] [--live-effects NAME...] [--trust] [--json]``: re-run a
recorded run and check it step by step.

The run's entry is started again in a child process with every effect served from the journal
(DESIGN.md "Replay and fork"). Exit codes: 0 no divergence (or a fork was made), 1 divergence,
2 error — drift without ``--allow-drift`` included.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
from typing import Any

from rich.console import Group
from rich.text import Text

from snapstate_capture import Run, SnapStateError, Timeline
from snapstate_capture.errors import step_out_of_range
from snapstate_capture.replay.dap_stop import DEFAULT_LISTEN, parse_listen
from snapstate_capture.replay.drift import Drift, find_drift
from snapstate_capture.replay.linemap import patched_only
from snapstate_capture.replay.launch import replay
from snapstate_capture.replay.relocate import relocation_for
from snapstate_capture.replay.stops import ends_mid_line
from snapstate_capture.store.locations import settle
from snapstate_capture.trust.gate import require_trust

from ..progress import add_quiet_argument, lines as progress_lines, wanted as progress_wanted
from ..safe_text import plain
from .common import add_file_argument, add_run_argument, console, open_file, print_json

EXIT_DIVERGENCE = 1


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "replay", help="re-run a recorded run with effects served from the journal",
        description="Re-execute a run in a child process, serving every effect (LLM/API "
                    "calls, clocks, randomness, input) from the recording and checking each "
                    "step against it. Stops at the first divergence. Exit 0: no divergence; "
                    "1: divergence; 2: error.")
    add_file_argument(parser)
    add_run_argument(parser)
    parser.add_argument("--to", type=int, default=None, metavar="N",
                        help="stop at step N (negative counts from the end)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--pdb", dest="mode", action="store_const", const="pdb",
                      help="at step N, enter pdb on the live frame")
    mode.add_argument("--console", dest="mode", action="store_const", const="console",
                      help="at step N, open a console with the frame's locals and globals")
    mode.add_argument("--debugpy", dest="mode", action="store_const", const="debugpy",
                      help="at step N, wait for your IDE's debugger (DAP: VS Code, PyCharm, "
                           "nvim-dap) with the live frame stopped there (snapstate[debug])")
    mode.add_argument("--live", dest="mode", action="store_const", const="live",
                      help="from step N, continue live as a fork recorded in the same file")
    parser.add_argument("--listen", default=None, metavar="HOST:PORT",
                        help=f"where --debugpy listens (default {DEFAULT_LISTEN})")
    add_common_arguments(parser)
    parser.add_argument("--live-effects", nargs="+", default=[], metavar="NAME",
                        help="effects that run for real instead of being served (e.g. input)")
    parser.set_defaults(handler=run, mode=None)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """``--allow-drift``, ``--trust`` and ``--json``, shared with ``resume``."""
    parser.add_argument("--allow-drift", action="store_true",
                        help="replay even though source files changed since the recording")
    parser.add_argument("--trust", action="store_true",
                        help="trust FILE although its run is not signed with your key: replay "
                             "runs the program it names and loads its payloads (effect "
                             "results), which runs code from the file")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_quiet_argument(parser)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    finally:  # a fork's steps the writer could not fold while this read the file
        settle(args.file)


def _run(args: argparse.Namespace) -> int:
    with open_file(args.file, trust=args.trust) as timeline:
        chosen = timeline.run(args.run)
        count = len(chosen.steps)
        to = args.to
        if to is not None:
            if to < 0:
                to += count
            if not 0 <= to < count:
                raise SnapStateError(f"{timeline.path}: "
                                     + step_out_of_range(args.to, chosen.id, count))
        elif args.mode:
            raise SnapStateError(f"{timeline.path}: --{args.mode} needs --to N (the step to "
                                 "stop at)")
        if args.listen is not None and args.mode != "debugpy":
            raise SnapStateError("--listen goes with --debugpy")
        if args.mode == "debugpy" and importlib.util.find_spec("debugpy") is None:
            raise SnapStateError("--debugpy needs debugpy: pip install 'snapstate[debug]'")
        try:
            parse_listen(args.listen or DEFAULT_LISTEN)
        except ValueError as exc:
            raise SnapStateError(str(exc)) from None
        return replay_and_report(timeline, chosen, args, to=to, mode=args.mode or "check",
                                 live_effects=args.live_effects)


def replay_and_report(timeline: Timeline, chosen: Run, args: argparse.Namespace, *,
                      to: int | None, mode: str, live_effects: list[str]) -> int:
    """Check trust and drift, replay, print the outcome; return the exit code."""
    # Replay starts the program the file names and serves its payloads: the run must verify
    # under the user's key (their own signed recording) or the user says --trust.
    require_trust(chosen, trust=args.trust, what="effect results and the run's entry for replay")
    out = console()
    relocation = relocation_for(chosen)
    if relocation.moved and not args.json:  # said before pdb or a fork takes the terminal
        out.print(plain(f"note: replaying the program in {relocation.new} (the copy nearest "
                        f"the timeline file), not in {relocation.old}, where it was recorded",
                        "yellow"), soft_wrap=True)
    drift = find_drift(chosen)
    remap = bool(drift) and patched_only(chosen).ok
    if remap:  # changes inside patched blocks only: not drift (issue 17), lines are mapped
        if not args.json:
            out.print(plain("code changed inside patched blocks only: replaying under the new "
                            "code", "yellow"), soft_wrap=True)
        drift = []
    if drift and not args.json:
        out.print(render_drift(drift), soft_wrap=True)
    if drift and not args.allow_drift:
        if args.json:
            print_json({"status": "drift", "drift": [d.to_json() for d in drift]})
        raise SnapStateError(f"{timeline.path}: code changed since the recording "
                             f"({len(drift)} file(s)); pass --allow-drift to replay anyway")
    # Progress lines only while the program alone shares the terminal: not before pdb, a
    # console, a debugger or a live fork takes it over.
    with progress_lines("replaying", quiet=args.quiet or args.json or mode != "check",
                        unit="steps") as update:
        result = replay(chosen, to=to, mode=mode, live_effects=live_effects, trust=True,
                        progress=not (args.json or args.quiet),
                        listen=getattr(args, "listen", None) or DEFAULT_LISTEN,
                        on_progress=update if progress_wanted(args.quiet or args.json
                                                               or mode != "check") else None,
                        remap_lines=remap)
    if args.json:
        print_json({**result, "drift": [d.to_json() for d in drift]})
    if result.get("status") == "error":
        raise SnapStateError(f"{timeline.path}: {result.get('message')}")
    if not args.json:
        if ends_mid_line(chosen.entry):
            out.print()  # after pytest's "test_x.py " progress, not at its end (piped too)
        for note in result.get("notes") or []:
            out.print(plain(f"note: {note}", "yellow"), soft_wrap=True)
        out.print(render_result(result, timeline=str(timeline.path)), soft_wrap=True)
    return EXIT_DIVERGENCE if result.get("status") == "divergence" else 0


def render_drift(drift: list[Drift]) -> Group:
    """The drifted files with their short diffs, as plain text."""
    parts: list[Any] = [Text(f"code drift: {len(drift)} file(s) changed since the recording",
                             style="bold yellow")]
    for item in drift:
        parts.append(plain(f"  {item.filename} ({item.status}"
                           + (f", {item.changed_lines} lines" if item.changed_lines else "")
                           + ")", "yellow"))
        for line in item.diff:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            parts.append(plain(f"    {line}", style))
    return Group(*parts)


def render_result(result: dict[str, Any], *, timeline: str) -> Group:
    """The replay's outcome: the one-line message, a fork's id, or the divergence report."""
    parts: list[Any] = []
    report = result.get("divergence")
    if result.get("status") == "divergence" and report:
        parts.extend(render_divergence(report))
    else:
        parts.append(plain(str(result.get("message", "")), "bold green"))
    fork = result.get("fork")
    if fork:
        parts.append(plain(f"fork {fork['run'][:8]} of run {fork['parent'][:8]} at step "
                           f"{fork['step']} ({result.get('fork_status', '?')}): "
                           f"see `snapstate ls {timeline}`", "bold"))
    return Group(*parts)


_HEX_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def _only_addresses(expected: Any, actual: Any) -> bool:
    """Whether two shown values are strings (their reprs are quoted) that differ, and only in
    the memory addresses they name. An object's own repr naming its address says nothing
    of where two objects differ: that one is deeper than the previews."""
    return (isinstance(expected, str) and isinstance(actual, str) and expected != actual
            and expected[:1] in ("'", '"') and actual[:1] in ("'", '"')
            and _HEX_ADDRESS.sub("0x…", expected) == _HEX_ADDRESS.sub("0x…", actual))


def render_divergence(report: dict[str, Any]) -> list[Any]:
    """Expected vs actual for one divergence report (``snapstate_capture.replay.report``)."""
    parts: list[Any] = [plain(f"divergence at step {report.get('step')}: "
                              f"{report.get('message')}", "bold red")]
    for side in ("expected", "actual"):
        facts = report.get(side)
        if facts:
            label = f" {facts.get('label')!r}" if facts.get("label") else ""
            parts.append(plain(f"  {side:<8} {facts.get('kind')}{label} in "
                               f"{facts.get('function')} ({facts.get('filename')}:"
                               f"{facts.get('lineno')})"))
    for var in report.get("variables") or []:
        parts.append(plain(f"  {var.get('frame')}: {var.get('name')}", "bold"))
        parts.append(plain(f"    expected {var.get('expected')}", "green"))
        parts.append(plain(f"    actual   {var.get('actual')}", "red"))
        diff = var.get("diff") or []
        if len(diff) > 1 or (diff and diff[0][0] != "(value)"):
            for path, exp, act in diff:
                parts.append(plain(f"      {path}: {exp} -> {act}"))
        elif not diff and "expected" in var and "actual" in var:
            if _only_addresses(var.get("expected"), var.get("actual")):
                # a repr the program kept (``repr(obj)``, ``"%s" % (obj,)``): the address is
                # the whole difference, another number in every process
                parts.append(plain("      the values differ only in memory addresses (0x…): "
                                   "the program keeps an object's repr or address, which is "
                                   "another number in every run", "dim"))
            else:  # equal previews (addresses aside) of different values: the change is deeper
                parts.append(plain(f"      the saved previews agree (memory addresses aside): "
                                   f"the difference is deeper than they go; `--to "
                                   f"{report.get('step')} --pdb` stops there to look", "dim"))
    effect = report.get("effect")
    if effect:
        if effect.get("expected_name"):
            parts.append(plain(f"  effect expected {effect['expected_name']} at "
                               f"{effect.get('expected_site')}", "green"))
        parts.append(plain(f"  effect called   {effect.get('name')} at {effect.get('site')} "
                           f"(task {effect.get('task')})", "red"))
        for path, exp, act in effect.get("arguments") or []:
            parts.append(plain(f"    argument {path}: expected {exp}, actual {act}"))
    return parts
