"""A step diff as Rich text: shared by ``snapstate diff`` and the inspector's diff views.

Everything from the file goes through ``safe_text.plain`` (no markup, control characters
escaped). ``render_step_diff`` gives one ``Text`` per line: each frame that differs, its
variables (``~`` changed, ``+`` added, ``-`` removed) and one line per structural change
(``plan[3]['status']: 'todo' → 'done'``), then notes (partial diff, fallbacks).
"""

from __future__ import annotations

from rich.text import Text

from snapstate_capture import Step

from .model.diff import StepDiff, VariableDiff
from .model.value_diff import Change
from .safe_text import plain

MAX_CHANGES_SHOWN = 12


def step_title(step: Step) -> Text:
    """``step 3  checkpoint 'observe'  run_agent:40`` as plain text."""
    text = Text(f"step {step.index}", style="bold")
    text.append(f"  {step.kind}", style="blue")
    if step.label:
        text.append_text(plain(f" {step.label!r}"))
    text.append_text(plain(f"  {step.function}:{step.lineno}", "dim"))
    return text


def render_step_diff(result: StepDiff, indent: str = "") -> list[Text]:
    """The body of a step diff: each frame that differs, with its variables."""
    lines: list[Text] = []
    for frame in result.frames:
        if frame.status == "same":
            continue
        head = Text(indent)
        marker = {"added": ("+ frame ", "green"), "removed": ("- frame ", "red")}.get(
            frame.status, ("", "bold"))
        head.append(marker[0], style=marker[1])
        head.append_text(plain(frame.function, "bold green"))
        head.append(f"  line {frame.a_lineno if frame.a_lineno is not None else '-'} → "
                    f"{frame.b_lineno if frame.b_lineno is not None else '-'}", style="dim")
        lines.append(head)
        for var in frame.variables:
            lines.extend(render_variable(var, indent + "  "))
    if result.extra:
        lines.append(Text(indent + "step values", style="bold"))
        for var in result.extra:
            lines.extend(render_variable(var, indent + "  "))
    for note in result.notes:
        lines.append(plain(indent + note, "yellow"))
    return lines


def render_variable(var: VariableDiff, indent: str) -> list[Text]:
    """One differing variable: a header line, then one line per structural change."""
    line = Text(indent)
    if var.status in ("added", "removed"):
        sign, style = ("+ ", "green") if var.status == "added" else ("- ", "red")
        type_name, text = var.new if var.status == "added" else var.old  # type: ignore[misc]
        line.append(sign, style=style)
        line.append_text(plain(var.name, "bold"))
        line.append_text(plain(f": {type_name.removeprefix('builtins.')} ", "cyan"))
        line.append_text(plain(text, style))
        return [line]
    changes = var.changes
    line.append("~ ", style="yellow")
    line.append_text(plain(var.name, "bold"))
    if len(changes) == 1 and changes[0].path == "":
        line.append(": ")
        line.append_text(change_text(changes[0]))
        out = [line]
    else:
        out = [line]
        for change in changes[:MAX_CHANGES_SHOWN]:
            row = Text(indent + "    ")
            row.append_text(plain(var.name + change.path, "bold" if change.path else ""))
            row.append(": ")
            row.append_text(change_text(change))
            out.append(row)
        if len(changes) > MAX_CHANGES_SHOWN:
            out.append(Text(f"{indent}    … {len(changes) - MAX_CHANGES_SHOWN} more changes "
                            "(--json lists them all)", style="dim"))
    out.extend(plain(f"{indent}    note: {note}", "yellow") for note in var.diff.notes)
    return out


def change_text(change: Change) -> Text:
    """``'todo' → 'done'``, ``+ 5``, ``- 'x'``, ``type int → str (1 → '1')``, ``len 3 → 4``."""
    text = Text()
    if change.kind == "added":
        text.append("added ", style="green")
        text.append_text(plain(change.new, "green"))
    elif change.kind == "removed":
        text.append("removed ", style="red")
        text.append_text(plain(change.old, "red"))
    elif change.kind == "type":
        text.append_text(plain(f"type {_short(change.old_type)} → {_short(change.new_type)} (",
                               "magenta"))
        text.append_text(plain(change.old, "red"))
        text.append(" → ")
        text.append_text(plain(change.new, "green"))
        text.append(")", style="magenta")
    elif change.kind == "len":
        text.append_text(plain(f"length {change.old} → {change.new}", "magenta"))
    elif change.kind == "hidden":
        text.append("differs beyond the preview", style="magenta")
    else:
        text.append_text(plain(change.old, "red"))
        text.append(" → ")
        text.append_text(plain(change.new, "green"))
    return text


def _short(type_name: str | None) -> str:
    return (type_name or "?").removeprefix("builtins.")

