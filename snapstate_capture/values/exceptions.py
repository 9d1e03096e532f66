"""Exceptions as plain data: no live traceback or frame objects are ever stored."""

from __future__ import annotations

import os
import traceback
from typing import Any

from .preview import safe_repr, static_attributes, type_name

#: Frames in this package (capture's own wrappers, e.g. an effect's call) are left out of a
#: recorded traceback: they are not the program's, and their line numbers change with ours.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def describe_exception(exc: BaseException, *, limit: int = 300) -> dict[str, Any]:
    """Return ``exc`` as JSON-able data; never raises.

    Shape: ``{"type": "module.qualname", "message": str, "args": [repr, ...],
    "attributes": {name: repr}, "traceback": [[file, line, function, text], ...],
    "text": formatted traceback}``. Reprs are bounded to ``limit`` characters.
    """
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - str() of a hostile exception
        message = safe_repr(exc, limit)
    try:
        args = [safe_repr(a, limit) for a in tuple.__iter__(exc.args)] if isinstance(
            exc.args, tuple) else []
    except Exception:  # noqa: BLE001
        args = []
    attributes = {name: safe_repr(value, limit)
                  for name, value in (static_attributes(exc) or [])
                  if not name.startswith("__")}
    try:
        report = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        report.stack = traceback.StackSummary.from_list(
            [f for f in report.stack if not f.filename.startswith(_PACKAGE_DIR)])
        frames = [[f.filename, f.lineno, f.name, f.line or ""] for f in report.stack]
        text = "".join(report.format())
    except Exception:  # noqa: BLE001 - formatting must not fail the capture
        frames, text = [], f"{type_name(exc)}: {message}"
    return {"type": type_name(exc), "message": message[:2000], "args": args,
            "attributes": attributes, "traceback": frames, "text": text[-20000:]}
