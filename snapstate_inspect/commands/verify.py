"""``snapstate verify FILE [--signed] [--json]``: check every blob hash, step chain and signature.

Exit codes: 0 nothing tampered or corrupt (and, with ``--signed``, every run signed by your key);
1 something failed — the report says which run, which step, which blob and the steps using it;
2 the file cannot be read at all (one line on stderr).
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.text import Text

from snapstate_capture.trust.keys import KeyFileError, find_key
from snapstate_capture.trust.verify import Report, RunReport, verify_timeline

from ..progress import add_quiet_argument, bar as progress_bar
from ..safe_text import plain
from .common import add_file_argument, console, open_file, print_json

EXIT_FAILED = 1
_STEPS_SHOWN = 20


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "verify", help="check hashes, step chains and signatures (tamper detection)",
        description="Check every blob against its hash, every run's step chain and effect "
                    "journal, and every run's signature under your key. Exit 0 when nothing is "
                    "tampered or corrupt, 1 when something is, 2 when the file cannot be read.")
    add_file_argument(parser)
    parser.add_argument("--signed", action="store_true",
                        help="also fail (exit 1) unless every run is signed by your key")
    parser.add_argument("--json", action="store_true", help="print JSON (stable form)")
    add_quiet_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        key = find_key()
        key_problem = None
    except KeyFileError as exc:
        key, key_problem = None, str(exc)
    with open_file(args.file) as timeline, \
            progress_bar("verifying", quiet=args.quiet or args.json, unit="blobs+steps") as update:
        report = verify_timeline(timeline, key, progress=update)
    failed = not report.intact or (args.signed and not all(
        r.signature == "valid" for r in report.runs))
    if args.json:
        print_json(report_json(report, key_problem))
    else:
        out = console()
        for line in report_lines(report, key_problem):
            out.print(line)
        verdict = ("FAILED: the file was altered or is corrupt" if not report.intact
                   else "FAILED: not every run is signed by your key" if failed
                   else "ok: nothing altered or corrupt")
        out.print(Text(verdict, style="bold red" if failed else "bold green"))
    return EXIT_FAILED if failed else 0


def signature_text(run: RunReport, own: str | None = None) -> str:
    """The signature state of ``run`` in words (``own``: the id of the key it was checked
    with)."""
    key = f" {run.key_id}" if run.key_id else ""
    return {"valid": f"signed by this key{key}",
            "trusted": f"signed by {run.signer}{key}",
            "unsigned": "unsigned",
            "other-key": f"signed by another key{key} (cannot check it)",
            "no-key": f"signed by key{key}; you have no key to check it (snapstate keygen)",
            "invalid": f"signed by this key{key}, altered: signature invalid"
                       if run.key_id and run.key_id == own else
                       f"signature invalid{key} (run altered after signing)",
            }.get(run.signature, run.signature)


def _steps_text(steps: list[int]) -> str:
    shown = ", ".join(str(s) for s in steps[:_STEPS_SHOWN])
    more = f" and {len(steps) - _STEPS_SHOWN} more" if len(steps) > _STEPS_SHOWN else ""
    return f"used by step{'s' if len(steps) != 1 else ''} {shown}{more}" if steps \
        else "used by no step"


def report_lines(report: Report, key_problem: str | None = None) -> list[Text]:
    """Human-readable lines of ``report`` (file data shown literally)."""
    lines: list[Text] = []
    if key_problem:
        lines.append(plain(f"key: {key_problem}", "yellow"))
    if report.damaged:
        lines.append(plain(f"database damaged: {report.damaged}", "bold red"))
    if not report.runs:
        lines.append(plain(f"{report.path}: no runs"))
    for r in report.runs:
        line = Text()
        line.append(f"run {r.run_id[:8]} ", style="bold")
        line.append_text(plain(f"{r.name}  {r.status}  {r.steps} steps  "))
        line.append_text(plain(signature_text(r, report.key_id), "green" if r.signature in ("valid", "trusted") else
                               "red" if r.signature == "invalid" else "yellow"))
        lines.append(line)
        if r.chain_broken_at is not None:
            lines.append(plain(f"    chain broken at step {r.chain_broken_at}: {r.chain_problem}",
                               "bold red"))
        elif r.chain_problem:
            lines.append(plain(f"    altered: {r.chain_problem}", "bold red"))
        if r.live:
            lines.append(plain(f"    still recording: checked the {r.steps} step(s) committed "
                               "so far", "yellow"))
        for key, problem in r.corrupt.items():
            lines.append(plain(f"    {problem.kind} {key[:12]} {problem.problem}: "
                               f"{_steps_text(problem.steps)}", "bold red"))
    for run_id, left in report.orphans.items():
        if run_id == "?":  # (``verify._orphans``: the rows' run ids themselves are damaged)
            lines.append(plain(f"damaged: {left}", "bold red"))
            continue
        lines.append(plain(f"rows of run {run_id[:8]} remain without their run ({left}): its "
                           "run record was deleted or changed", "bold red"))
    used = {k for r in report.runs for k in r.corrupt}
    for key, problem in report.bad_blobs.items():
        if key not in used:
            lines.append(plain(f"blob {key[:12]} {problem} (used by no run)", "red"))
    return lines


def report_json(report: Report, key_problem: str | None = None) -> dict[str, Any]:
    """The stable JSON form: ``{"file", "key_id", "key_problem", "intact", "damaged",
    "bad_blobs": {key: problem}, "orphans": {run id: what is left}, "runs": [{"id", "name",
    "status", "steps", "signature", "key_id", "signer", "chain_broken_at", "chain_problem", "intact", "trusted", "live",
    "corrupt": {key: {"kind", "problem", "steps"}}}]}``."""
    return {
        "file": report.path, "key_id": report.key_id, "key_problem": key_problem,
        "intact": report.intact, "damaged": report.damaged, "bad_blobs": report.bad_blobs,
        "orphans": report.orphans,
        "runs": [{"id": r.run_id, "name": r.name, "status": r.status, "steps": r.steps,
                  "signature": r.signature, "key_id": r.key_id, "signer": r.signer,
                  "chain_broken_at": r.chain_broken_at, "chain_problem": r.chain_problem,
                  "intact": r.intact, "trusted": r.trusted, "live": r.live,
                  "corrupt": {k: {"kind": p.kind, "problem": p.problem, "steps": p.steps}
                              for k, p in r.corrupt.items()}}
                 for r in report.runs],
    }
