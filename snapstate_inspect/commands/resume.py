"""``snapstate resume FILE [--run ID] [--answer TEXT | --answer-json JSON | --answer-file F]
[--by NAME] [--wake] [--trust] [--allow-drift] [--json]``: continue a waiting, sleeping,
crashed or interrupted run (``snapstate_capture.durable.resume``).

A waiting run needs an answer; on a terminal, without one, the wait's prompt is shown and the
answer read (again after a refusal). Exit codes: 0 the continuation finished, 1 a divergence,
2 an error (a refused answer, a lease held by another resumer, …), 75 the continuation paused
at another wait (``snap.EXIT_PAUSED``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from snapstate_capture import SnapStateError
from snapstate_capture.capture.answers import check_answer, parse_typed, read_answer_file
from snapstate_capture.durable.resume import NO_ANSWER, AnswerRefused, NeedsAnswer, resume

from ..safe_text import escape_controls, plain
from .common import add_file_argument, add_run_argument, console, open_file, print_json
from .replay import EXIT_DIVERGENCE, add_common_arguments, render_result


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "resume", help="continue a waiting, sleeping, crashed or interrupted run",
        description="Replay a run to where it stopped (effects served from the journal) and "
                    "continue it live as its continuation in the same file: a waiting run "
                    "with an answer, a sleeping run once due, a crashed run from its last "
                    "step. One resumer at a time (a lease in the file). Exit 0: finished; "
                    "1: divergence; 2: error; 75: paused again at another wait.")
    add_file_argument(parser)
    add_run_argument(parser)
    given = parser.add_mutually_exclusive_group()
    given.add_argument("--answer", metavar="TEXT", help="the answer, as text")
    given.add_argument("--answer-json", metavar="JSON", help="the answer, as JSON")
    given.add_argument("--answer-file", metavar="F",
                       help="the answer from a file: its text, or its JSON for a .json file")
    parser.add_argument("--by", metavar="NAME",
                        help="who answers, as journaled (default: your login)")
    parser.add_argument("--wake", action="store_true",
                        help="wake a sleeping run before its due time")
    add_common_arguments(parser)
    parser.set_defaults(handler=run)


def read_answer(args: argparse.Namespace) -> Any:
    """The answer the arguments give, or ``NO_ANSWER``; raises ``SnapStateError`` for JSON
    that does not parse or a file that cannot be read (naming it)."""
    if args.answer is not None:
        return args.answer
    if args.answer_json is not None:
        try:
            return json.loads(args.answer_json)
        except ValueError as exc:
            raise SnapStateError(f"{args.file}: --answer-json is not JSON ({exc})") from None
    if args.answer_file is not None:
        return read_answer_file(Path(args.answer_file))
    return NO_ANSWER


def run(args: argparse.Namespace) -> int:
    answer = read_answer(args)
    while True:
        try:
            result = resume(args.file, run=args.run, answer=answer, by=args.by,
                            trust=args.trust, allow_drift=args.allow_drift,
                            wake_early=args.wake, progress=not args.json)
            break
        except NeedsAnswer:
            if not sys.stdin.isatty() or answer is not NO_ANSWER:
                raise
            answer = ask(args)
        except AnswerRefused as exc:
            if not sys.stdin.isatty() or args.answer is not None or args.answer_json \
                    is not None or args.answer_file is not None:
                raise
            sys.stderr.write(f"snapstate: {escape_controls(str(exc), keep_newlines=False)}\n")
            answer = ask(args)
    if args.json:
        print_json(result)
    else:
        out = console()
        for note in result.get("notes") or []:
            out.print(f"note: {note}", style="yellow", soft_wrap=True, markup=False)
        out.print(render_resumed(result, args.file), soft_wrap=True)
    if result.get("status") == "divergence":
        return EXIT_DIVERGENCE
    return int(result.get("exit_code") or 0)


def render_resumed(result: dict[str, Any], path: str) -> Any:
    """``run 1a2b3c4d continued as 5e6f7a8b after replaying 12 steps: finished`` (or the
    new wait, or the divergence report), as plain text."""
    fork = result.get("fork")
    if result.get("status") != "ok" or not fork:
        return render_result(result, timeline=path)
    pause = result.get("pause") or {}
    status = str(result.get("fork_status", "?"))
    if pause.get("pause") == "wait":
        status = f"waiting for {pause.get('name')!r}"
    elif pause.get("pause") == "sleep":
        status = f"sleeping until {_clock(float(pause.get('due') or 0))}"
    count = fork["step"] + 1
    return plain(f"run {fork['parent'][:8]} continued as {fork['run'][:8]} after replaying "
                 f"{count} step{'' if count == 1 else 's'}: {status} "
                 f"(see `snapstate ls {path}`)", "bold")


def _clock(when: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S")


def ask(args: argparse.Namespace) -> Any:
    """Show the wait's prompt on the terminal and read an answer that fits its schema."""
    with open_file(args.file) as timeline:
        pause = timeline.run(args.run).pause or {}
    spec = pause.get("schema")
    prompt = escape_controls(str(pause.get("prompt") or ""), keep_newlines=True)
    name = escape_controls(str(pause.get("name") or "?"), keep_newlines=False)
    out = console()
    out.print(f"run waits for {name!r}" + (f": {prompt}" if prompt else ""), soft_wrap=True,
              markup=False)
    if spec and spec.get("json") is not None:
        out.print("schema: " + escape_controls(json.dumps(spec["json"]), keep_newlines=False),
                  style="dim", soft_wrap=True, markup=False)
    while True:
        typed = input("answer> ")
        answer = parse_typed(typed, spec)
        problem = check_answer(spec, answer)
        if problem is None:
            return answer
        out.print(f"refused: {escape_controls(problem, keep_newlines=False)}", style="red",
                  soft_wrap=True, markup=False)
