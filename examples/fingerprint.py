"""A normalised fingerprint of a timeline file, to tell whether a committed sample is current.

``fingerprint(path)`` reads every run, step, frame, value preview and saved source of the file
through the public reader API (so a file the current code cannot read fails here) and returns
text lines. Two recordings of the same deterministic program by the same code give the same
lines: times, run ids and process facts are left out, and machine-specific text (the checkout's
directory, the Python installation's directories, object addresses) is replaced by
placeholders. Preview JSON is compared whole, so a change of the preview format, of a capture
rule, or of an example's code makes a committed sample stale.

``portable=True`` keeps only step signatures (kind, function, label, file, line) and the values
stored with each step, for comparing recordings made by different Python versions.
"""

from __future__ import annotations

import hashlib
import json
import re
import sysconfig
from collections.abc import Iterable
from pathlib import Path

import snapstate_capture as snap

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
#: A line number of snapstate's own code in a recorded traceback (an effect that raised): it
#: moves whenever capture's code does, which says nothing about the sample.
_OWN_LINE = re.compile(r'(snapstate_capture/[\w/]+\.py(?:\\?", line |", ))\d+')
_EXAMPLE_FILE = re.compile(r"^(.*)/examples/[^/]+\.py$")


def _library_roots() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths},
                  key=len, reverse=True)


class _Normaliser:
    """Replaces checkout and library directories and object addresses in text."""

    def __init__(self, roots: Iterable[str]) -> None:
        self.replacements = [(root, "<root>") for root in sorted(set(roots), key=len,
                                                                 reverse=True) if root]
        self.replacements += [(lib, "<lib>") for lib in _library_roots()]

    def __call__(self, text: str) -> str:
        for old, new in self.replacements:
            text = text.replace(old, new)
        return _OWN_LINE.sub(r"\g<1>?", _ADDRESS.sub("0x?", text))


def _roots(run: snap.Run) -> set[str]:
    roots = {str(run.entry.get("cwd") or "")}
    for step in run.steps:
        for frame in step.frames:
            match = _EXAMPLE_FILE.match(frame.filename)
            if match:
                roots.add(match.group(1))
        break  # every example's first step has the program's own frames on its stack
    return roots


def _preview_text(value: snap.Value, norm: _Normaliser, cache: dict[str, str]) -> str:
    """The value's preview as normalised JSON (cached by preview hash: values repeat)."""
    key = value.preview_key or ""
    text = cache.get(key)
    if text is None:
        shown = {k: v for k, v in value.preview.items() if k != "identity"}  # a digest of the
        # value (docs/value-identity.md): of paths inside it too, so it follows the checkout
        text = norm(json.dumps(shown, sort_keys=True, ensure_ascii=False))
        if key:
            cache[key] = text
    return text


def fingerprint(path: str | Path, *, portable: bool = False) -> list[str]:
    """Normalised description of every run in the timeline at ``path``, one item per line.

    Raises ``snapstate_capture.SnapStateError`` (``TimelineError``, ``IntegrityError``, …) when
    the file cannot be read by the current code.
    """
    lines: list[str] = []
    with snap.open_timeline(path) as timeline:
        for run in timeline.runs:
            norm = _Normaliser(_roots(run))
            # cwd, environment variables, the random state, hash seed and address layout are
            # process facts
            entry = {k: v for k, v in run.entry.items()
                     if k not in ("cwd", "env", "rng", "hash_seed", "hash_seed_env", "aslr")}
            parent = run.parent.step if run.parent else None
            error = (run.error or {}).get("type")
            lines.append(norm(f"run {run.name!r} {run.status} steps={len(run.steps)} "
                              f"parent_step={parent} error={error} entry={json.dumps(entry)}"))
            sources: dict[str, str] = {}
            previews: dict[str, str] = {}
            for step in run.steps:
                lines.append(norm(f"step {step.index} {step.kind} {step.function} "
                                  f"{step.label!r} {step.filename}:{step.lineno} "
                                  f"thread={step.thread} task={step.task}"))
                for name, value in step.extra.items():
                    shown = value.repr if portable else _preview_text(value, norm, previews)
                    lines.append(norm(f"  {name} = {shown}"))
                if portable:
                    continue
                lines.extend(norm(f"  error: {error}") for error in step.errors)
                for frame in step.frames:
                    lines.append(norm(f"  frame {frame.function} {frame.filename}:{frame.lineno}"))
                    for name, value in frame.locals.items():
                        lines.append(f"    {name} = {_preview_text(value, norm, previews)}")
                    if frame.filename not in sources:
                        text = "\n".join(frame.source).encode()
                        sources[frame.filename] = hashlib.blake2b(text, digest_size=8).hexdigest()
            lines.extend(norm(f"source {name} {digest}") for name, digest in sorted(sources.items()))
    return lines


def first_difference(expected: list[str], actual: list[str], context: int = 3) -> str:
    """A short report of where two fingerprints part: the first differing line with context,
    or "" when they are equal."""
    for number, (old, new) in enumerate(zip(expected, actual)):
        if old != new:
            before = "\n".join(f"    {line}" for line in expected[max(number - context, 0):number])
            return (f"line {number}:\n{before}\n  - {old[:400]}\n  + {new[:400]}")
    if len(expected) != len(actual):
        return f"lengths differ: {len(expected)} lines vs {len(actual)} lines"
    return ""
