"""Code drift: files on a run's saved stacks whose source changed since the recording.

The recorder stores the text of every file that appears on a saved stack (frame records carry
its ``source`` hash). Before replaying, each such file is read again the way the recorder read
it (``linecache``) and hashed; a file that changed or disappeared is **drift**, listed with a
short unified diff. Replay proceeds over drift only when the user says so (``--allow-drift``).
"""

from __future__ import annotations

import difflib
import linecache
import os
from dataclasses import dataclass, field

from ..capture.frames import source_bytes
from ..store.hashing import content_hash
from ..store.reader import Run
from .relocate import Relocation, relocation_for

#: Diff lines kept per drifted file.
MAX_DIFF_LINES = 24


@dataclass(frozen=True)
class Drift:
    """One drifted file: ``status`` is ``"changed"`` or ``"missing"``; ``diff`` holds unified
    diff lines (recorded → current), at most ``MAX_DIFF_LINES``; ``changed_lines`` counts the
    lines added or removed."""

    filename: str
    status: str
    diff: list[str] = field(default_factory=list)
    changed_lines: int = 0

    def to_json(self) -> dict[str, object]:
        return {"filename": self.filename, "status": self.status, "diff": self.diff,
                "changed_lines": self.changed_lines}


def current_source(path: str) -> bytes | None:
    """The file's text as the recorder reads it (``linecache``), encoded (``b""`` for an empty
    file); None if unreadable."""
    linecache.checkcache(path)
    return source_bytes(path)


def find_drift(run: Run, cwd: str | None = None) -> list[Drift]:
    """Files whose current source differs from the recording, in filename order.

    Relative filenames are resolved against ``cwd`` (default: the run's recorded cwd), and
    files under the recorded cwd are looked for where the replay will run them
    (``relocate.relocation_for``). Pseudo-files (``<string>``, ``<stdin>``) are skipped: they
    have no file to compare. A relocated file is named where it is now (the copy's).
    """
    base = cwd or run.entry.get("cwd") or os.getcwd()
    relocation = relocation_for(run) if cwd is None else Relocation(base, base)
    out = []
    for filename, key in sorted(run.source_files().items()):
        if filename.startswith("<"):
            continue
        path = relocation.path(os.path.normpath(os.path.join(base, filename)))
        shown = path if relocation.moved else filename  # a copy's file: the one that changed
        data = current_source(path)
        if data is None:
            out.append(Drift(shown, "missing"))
            continue
        if content_hash(data).hex() == key:
            continue
        old = run.timeline.blob(key).decode("utf-8", "replace").splitlines()
        new = data.decode("utf-8", "replace").splitlines()
        lines = list(difflib.unified_diff(old, new, "recorded", "current", n=1, lineterm=""))
        changed = sum(1 for line in lines[2:] if line[:1] in "+-")
        out.append(Drift(shown, "changed", lines[:MAX_DIFF_LINES], changed))
    return out
