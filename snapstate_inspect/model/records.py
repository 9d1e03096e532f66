"""Runs and steps as JSON-able dicts: the stable ``--json`` forms of ``ls`` and ``show``.

``run_json(run)`` → ``{"id", "name", "status", "steps", "started", "ended", "duration",
"parent": {"run", "step"} | null, "entry", "error", "pause", "continued_as"}`` — ``pause`` is
what a waiting or sleeping run stopped for (``Run.pause``), ``continued_as`` the id of the run
that continued it, or null.

``step_json(step)`` → ``{"index", "kind", "label", "wall_time", "thread", "task", "function",
"filename", "lineno", "n_changed", "errors": [str], "extra": {name: value},
"frames": [{"function", "filename", "lineno", "locals": {name: value}}]}`` where each value is
``{"type", "repr", "placeholder": {"reason", "path"} | null, "redacted": bool,
"has_payload": bool, "preview": {...}}``. Keys are only ever added, never renamed.
"""

from __future__ import annotations

from typing import Any

from snapstate_capture import Run, Step, Value


def run_json(run: Run) -> dict[str, Any]:
    """Return the JSON form of ``run`` (see module docstring)."""
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "steps": run.step_count,
        "started": run.started,
        "ended": run.ended,
        "duration": run.duration,
        "parent": {"run": run.parent.run_id, "step": run.parent.step} if run.parent else None,
        "entry": run.entry,
        "error": run.error,
        "pause": run.pause,
        "continued_as": run.continued_as,
    }


def value_json(value: Value, *, with_preview: bool = True) -> dict[str, Any]:
    """Return the JSON form of one captured value (never loads its payload)."""
    preview = value.preview
    out = {
        "type": value.type_name,
        "repr": value.repr,
        "placeholder": preview.get("placeholder"),
        "redacted": value.is_redacted,
        "has_payload": value.has_payload,
    }
    if with_preview:
        out["preview"] = preview
    return out


def step_json(step: Step, *, with_preview: bool = True) -> dict[str, Any]:
    """Return the JSON form of ``step`` with its whole stack (see module docstring)."""
    return {
        "index": step.index,
        "kind": step.kind,
        "label": step.label,
        "wall_time": step.wall_time,
        "thread": step.thread,
        "task": step.task,
        "function": step.function,
        "filename": step.filename,
        "lineno": step.lineno,
        "n_changed": step.n_changed,
        "errors": step.errors,
        "extra": {name: value_json(v, with_preview=with_preview)
                  for name, v in step.extra.items()},
        "frames": [
            {"function": f.function, "filename": f.filename, "lineno": f.lineno,
             "locals": {name: value_json(v, with_preview=with_preview)
                        for name, v in f.locals.items()},
             **({"submitted": True} if f.submitted else {})}
            for f in step.frames
        ],
    }
