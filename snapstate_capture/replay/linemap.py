"""Code that changed inside ``patched`` blocks: which drift a resume accepts, and where the
recorded lines are in the current code (issue 17 point 5).

A deploy that wraps new code in ``if snap.patched("id"): new() else: old()`` changes a file the
waiting run was recorded in. Resuming under the new code is safe when every change lies inside
such blocks: steps recorded before the patch replay through the ``else`` branch (``patched``
is False there), and from the resume on the new branch runs. ``patched_only(run)`` tells
whether a run's drift is of that kind. The lines around the blocks moved, though, so replay
compares each recorded line number with the current code through a **line map** built from the
recorded source text and the current one (``difflib``: equal stretches map one to one; inside a
changed stretch an old line maps to the current line with the same text, in order). Drift
outside patched blocks is reported and refused as before (``drift.py``).
"""

from __future__ import annotations

import ast
import difflib
import os
from dataclasses import dataclass

from ..store.hashing import content_hash
from ..store.reader import Run, Timeline
from .drift import current_source


@dataclass(frozen=True)
class PatchedDrift:
    """The outcome of checking a run's drift: ``ok`` when every changed file changed only
    inside ``patched`` blocks (``patches``: their ids); else ``outside`` names the first
    change that is not (``file:line``)."""

    ok: bool
    patches: tuple[str, ...] = ()
    outside: str | None = None


def patched_blocks(source: str) -> tuple[list[tuple[int, int]], list[str]]:
    """The ``(first, last)`` lines of every ``if`` statement (with its ``else``) whose test
    calls ``patched(...)`` / ``snap.patched(...)``, and the patch ids named; ``([], [])`` for
    text that does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return [], []
    blocks, ids = [], []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        for call in ast.walk(node.test):
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name == "patched":
                blocks.append((node.lineno, node.end_lineno or node.lineno))
                if call.args and isinstance(call.args[0], ast.Constant):
                    ids.append(str(call.args[0].value))
                break
    return blocks, ids


def _inside(blocks: list[tuple[int, int]], first: int, last: int) -> bool:
    return any(a <= first and last <= b for a, b in blocks)


def changes_outside(old: list[str], new: list[str], blocks: list[tuple[int, int]]
                    ) -> int | None:
    """The first current line (1-based) of a change that is not inside ``blocks``, else
    None. A deletion counts where it happened: between two current lines."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        first, last = (j1 + 1, j2) if j2 > j1 else (j1, j1 + 1)
        if not _inside(blocks, max(first, 1), last):
            return max(first, 1)
    return None


def patched_only(run: Run) -> PatchedDrift:
    """Whether every file that changed since ``run`` was recorded changed only inside
    ``patched`` blocks (a missing file, or text that no longer parses, does not)."""
    from .relocate import relocation_for

    base = run.entry.get("cwd") or os.getcwd()
    relocation = relocation_for(run)
    patches: list[str] = []
    changed = False
    for filename, key in sorted(run.source_files().items()):
        if filename.startswith("<"):
            continue
        path = relocation.path(os.path.normpath(os.path.join(base, filename)))
        data = current_source(path)
        if data is None:
            return PatchedDrift(False, outside=f"{filename} (missing)")
        if content_hash(data).hex() == key:
            continue
        changed = True
        old = run.timeline.blob(key).decode("utf-8", "replace").splitlines()
        new_text = data.decode("utf-8", "replace")
        blocks, ids = patched_blocks(new_text)
        where = changes_outside(old, new_text.splitlines(), blocks)
        if where is not None:
            return PatchedDrift(False, outside=f"{filename}:{where}")
        patches.extend(ids)
    return PatchedDrift(changed, tuple(dict.fromkeys(patches)))


def line_map(old: list[str], new: list[str]) -> dict[int, int]:
    """Old line number → new line number (1-based) for the lines that survived."""
    mapping: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                mapping[i1 + k + 1] = j1 + k + 1
        elif tag == "replace":
            position = j1
            for i in range(i1, i2):
                text = old[i].strip()
                for j in range(position, j2):
                    if new[j].strip() == text and text:
                        mapping[i + 1] = j + 1
                        position = j + 1
                        break
    return mapping


class LineMaps:
    """Recorded line numbers → current ones, per recorded source text (frame records name the
    hash of their file's text, so steps recorded before and after a deploy map correctly)."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self._maps: dict[tuple[str, str], dict[int, int] | None] = {}

    def line(self, source_key: str | None, path: str | None, lineno: int | None) -> int | None:
        """Where recorded ``lineno`` of the file at ``path`` (recorded text ``source_key``)
        is in the current file; ``lineno`` itself when the text did not change or the line
        is gone."""
        if lineno is None or not source_key or not path:
            return lineno
        key = (source_key, path)
        if key not in self._maps:
            self._maps[key] = self._build(source_key, path)
        mapping = self._maps[key]
        return mapping.get(lineno, lineno) if mapping else lineno

    def _build(self, source_key: str, path: str) -> dict[int, int] | None:
        data = current_source(path)
        if data is None or content_hash(data).hex() == source_key:
            return None
        try:
            old = self.timeline.blob(source_key).decode("utf-8", "replace").splitlines()
        except Exception:  # noqa: BLE001 - no recorded text: lines stay as recorded
            return None
        return line_map(old, data.decode("utf-8", "replace").splitlines())
