"""``snapstate show FILE [STEP] [--run ID] [--step N] [--json]``: one step with its stack and
locals."""

from __future__ import annotations

import argparse
import datetime as dt

from rich.console import Group
from rich.table import Table
from rich.text import Text

from snapstate_capture import SnapStateError, Step, Value

from ..model.records import step_json
from ..model.values import SUBMITTED_FRAME
from ..safe_text import place, plain
from .common import add_file_argument, add_run_argument, console, open_file, pick_step, print_json


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("show", help="show one step: stack, locals, capture errors",
                            description="Show one step of a run (default: the last step of the "
                                        "last run) with its stack and each frame's locals.")
    add_file_argument(parser)
    # ``snapstate show agent.snap 12``: the form every newcomer types first (``--step`` too)
    parser.add_argument("position", type=int, nargs="?", default=None, metavar="STEP",
                        help="step index, as --step N")
    add_run_argument(parser)
    parser.add_argument("--step", type=int, default=None, metavar="N",
                        help="step index (negative counts from the end; default: last)")
    parser.add_argument("--json", action="store_true", help="print JSON (stable form)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if None not in (args.position, args.step) and args.position != args.step:
        raise SnapStateError(f"show: step {args.position} and --step {args.step} disagree: "
                             "give one of them")
    with open_file(args.file) as timeline:
        chosen = timeline.run(args.run)
        step = pick_step(timeline, chosen, args.step if args.step is not None else args.position)
        if args.json:
            print_json({"file": str(timeline.path),
                        "run": {"id": chosen.id, "name": chosen.name, "status": chosen.status},
                        "step": step_json(step)})
            return 0
        console().print(render_step(step, total=chosen.step_count, run_name=chosen.name,
                                    run_id=chosen.id, status=chosen.status))
    return 0


def value_text(value: Value) -> Text:
    """One value as a line: type, repr, and its placeholder / redaction / loadability note."""
    preview = value.preview
    line = Text()
    line.append_text(plain(value.type_name.removeprefix("builtins."), "cyan"))
    line.append(" ")
    line.append_text(plain(value.repr))
    if value.is_redacted:
        line.append("  [redacted: secret name]", style="magenta")
    holder = preview.get("placeholder")
    if isinstance(holder, dict):
        line.append_text(plain(f"  [placeholder: {holder.get('reason', '?')}]", "yellow"))
    parts = preview.get("placeholders")
    if isinstance(parts, list):
        for part in parts[:5]:
            if isinstance(part, dict):
                line.append_text(plain(f"  [placeholder at {part.get('path', '?')}: "
                                       f"{part.get('reason', '?')}]", "yellow"))
        if len(parts) > 5:
            line.append_text(plain(f"  [… {len(parts) - 5} more placeholders]", "yellow"))
    redacted = preview.get("redacted_parts")
    if isinstance(redacted, list) and redacted:
        shown = ", ".join(str(p) for p in redacted[:5]) + (" …" if len(redacted) > 5 else "")
        line.append_text(plain(f"  [redacted: {shown}]", "magenta"))
    if preview.get("not_loadable"):
        line.append_text(plain(f"  [{preview['not_loadable']}]", "yellow"))
    if value.serializer == "dill":
        line.append("  (dill)", style="dim")
    return line


def render_step(step: Step, *, total: int, run_name: str, run_id: str, status: str) -> Group:
    """Rich renderable of ``step``: header, stack (outermost first) with locals, errors."""
    when = dt.datetime.fromtimestamp(step.wall_time).strftime("%H:%M:%S.%f")[:-3]
    header = Text()
    header.append(f"step {step.index} of {total}", style="bold")
    header.append(f"  {step.kind}", style="bold blue")
    if step.label:
        header.append_text(plain(f"  {step.label}", "bold"))
    header.append_text(plain(f"  run {run_id[:8]} ({run_name}, {status})  {when}"
                             f"  thread {step.thread}" + (f"  task {step.task}" if step.task else ""),
                             "dim"))
    parts: list = [header]
    for depth, frame in enumerate(step.frames):
        title = Text(f"{'  ' * 0}#{depth} ", style="dim")
        title.append_text(plain(frame.function, "bold green"))
        title.append_text(plain(f"  {place(frame.filename, frame.lineno)}", "dim"))
        parts.append(title)
        if 0 < frame.lineno <= len(frame.source):
            parts.append(plain(f"    {frame.lineno:>5} │ {frame.source[frame.lineno - 1].strip()}",
                               "italic"))
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True)
        table.add_column(overflow="fold")
        for name, value in frame.locals.items():
            table.add_row(plain(f"    {name}"), value_text(value))
        parts.append(table)
        if frame.submitted and depth == len(step.frames) - 1:
            parts.append(Text(f"    {SUBMITTED_FRAME}", style="dim italic"))
    if step.extra:
        parts.append(Text("step values", style="bold"))
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True)
        table.add_column(overflow="fold")
        for name, value in step.extra.items():
            table.add_row(plain(f"    {name}"), value_text(value))
        parts.append(table)
    if step.errors:
        parts.append(Text(f"capture errors ({len(step.errors)})", style="bold yellow"))
        parts.extend(plain(f"    {error}", "yellow") for error in step.errors)
    return Group(*parts)
