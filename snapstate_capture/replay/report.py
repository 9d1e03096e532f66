"""Divergence reports: what replay expected, what the program did, and where values differ.

A report is a JSON-able dict, written by the replay child and rendered by ``snapstate replay``::

    {"step": 12, "reason": "value",          # kind | label | stack | line | value | effect-order
                                             # | effect-args | effect-missing | extra-step
                                             # | ended-early | outcome | not-replayable
     "message": "one line",
     "expected": {"kind", "label", "function", "filename", "lineno"} | null,
     "actual":   {...} | null,
     "variables": [{"frame", "name", "expected", "actual", "diff": [[path, exp, act], ...]}],
     "effect": {"name", "site", "task", "expected_name", "expected_site",
                "arguments": [[path, exp, act], ...]} | null}

Reprs come from previews (bounded, plain text); nothing here loads a payload.
"""

from __future__ import annotations

import sys

from typing import Any

from ..values.addresses import blank_addresses

#: Diff lines kept per variable.
MAX_DIFF = 20


def normalize(preview: Any) -> Any:
    """``preview`` with memory addresses blanked in its texts (``addresses.blank_addresses``:
    `` at 0x7f…``, ``<Template memory:7f…>``), for comparing two processes."""
    if isinstance(preview, dict):
        return {k: normalize(v) for k, v in preview.items()}
    if isinstance(preview, list):
        return [normalize(v) for v in preview]
    if isinstance(preview, str):
        return blank_addresses(preview)
    return preview


def diff_previews(expected: dict[str, Any] | None, actual: dict[str, Any] | None,
                  path: str = "", out: list[list[str]] | None = None,
                  limit: int = MAX_DIFF) -> list[list[str]]:
    """Paths where two previews differ: ``[[path, expected repr, actual repr], ...]``.

    Children are matched by label (``[3]``, ``['key']``, ``.attr``); a child present on one
    side only shows ``(absent)`` on the other. At most ``limit`` entries.
    """
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if expected is None or actual is None:
        out.append([path or "(value)", _repr(expected), _repr(actual)])
        return out
    exp_children = _children(expected)
    act_children = _children(actual)
    if (expected.get("type") != actual.get("type") or exp_children is None
            or act_children is None):
        if normalize(expected.get("repr")) != normalize(actual.get("repr")) or \
                expected.get("type") != actual.get("type"):
            out.append([path or "(value)", _repr(expected), _repr(actual)])
        return out
    before = len(out)
    for label in list(exp_children) + [k for k in act_children if k not in exp_children]:
        exp, act = exp_children.get(label), act_children.get(label)
        if exp is not None and act is not None and normalize(exp) == normalize(act):
            continue
        diff_previews(exp, act, path + label, out, limit)
        if len(out) >= limit:
            break
    if len(out) == before and normalize(expected) != normalize(actual):
        out.append([path or "(value)", _repr(expected), _repr(actual)])
    return out


def _children(preview: dict[str, Any]) -> dict[str, Any] | None:
    children = preview.get("children")
    if not isinstance(children, list):
        return None
    out = {}
    for item in children:
        if isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict):
            out[str(item[0])] = item[1]
    return out


def _repr(preview: dict[str, Any] | None) -> str:
    if preview is None:
        return "(absent)"
    return str(preview.get("repr", "?"))


def steps(count: int) -> str:
    """``"1 step"``, ``"12 steps"``: a count of steps as the replay's messages say it."""
    return f"{count} step" + ("" if count == 1 else "s")


def step_facts(kind: str | None, label: str | None, function: str | None,
               filename: str | None, lineno: int | None) -> dict[str, Any]:
    """The ``expected``/``actual`` header of a report."""
    return {"kind": kind, "label": label, "function": function, "filename": filename,
            "lineno": lineno}


def divergence(step: int, reason: str, message: str, *, expected: dict[str, Any] | None = None,
               actual: dict[str, Any] | None = None,
               variables: list[dict[str, Any]] | None = None,
               effect: dict[str, Any] | None = None) -> dict[str, Any]:
    """Build one divergence report (see the module docstring)."""
    return {"step": step, "reason": reason, "message": message, "expected": expected,
            "actual": actual, "variables": variables or [], "effect": effect}


def print_exit_message(exc: BaseException | None) -> None:
    """Write what the interpreter writes to stderr at its exit for a ``SystemExit`` with a
    message (``sys.exit("bad input")``, ``json.tool`` on broken JSON): the program's stderr
    is the replay's, and the recording showed the line too. Anything else: nothing."""
    code = getattr(exc, "code", None) if isinstance(exc, SystemExit) else None
    if code is None or isinstance(code, int):
        return
    try:
        sys.stderr.write(f"{code}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr closed: nowhere to say it, as for python
        pass
