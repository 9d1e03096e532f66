"""Which files the tracer traces: ``include``/``exclude`` globs and the default, the user's code.

Default (issue 6 point 2): files under the current directory, except the standard library,
site-packages and snapstate itself (wherever those live). With ``include`` globs, exactly the
files matching one of them are traced instead. ``exclude`` globs always win. A glob is matched
(``fnmatch``) against the absolute path, the path relative to the current directory and the
file's base name, so ``--include '*/json/*'``, ``--include 'agent/*.py'`` and
``--include tool.py`` all work. Snapstate's own files are never traced.

Nor is what snapstate's own code calls: replay reading the recording with ``json`` while
``--include '*/json/*'`` is on would otherwise be program steps the recording never had.
``own_kind`` sorts snapstate's files for the tracer: ``MACHINERY`` (capture, replay and store
work: whatever it calls is no program step), ``HANDS_OVER`` (the modules whose functions call
the program's own callables: ``record`` and ``@step`` wrappers, effects, retries, the
``snapstate record`` and replay runners — what they call is the program's) and ``WRAPS`` (hooks
around a library's own calls — the patched clocks and ids, the lineage hooks on threads, tasks
and pools, the post-import hook, the framework integrations' patches: whoever called the hook
made the call, so the tracer looks further down). The ``snapstate`` console script that
started the process (``mark_own_script``) is machinery and never traced: with
``--include '*'`` its frame stood below every step of the program.
"""

from __future__ import annotations

import fnmatch
import sys
import os
from collections.abc import Iterable
from typing import Any

from ..capture.frames import _LIBRARY_DIRS, _PACKAGE_DIR, OWN_DIRS


#: ``own_kind`` results.
NOT_OWN, MACHINERY, HANDS_OVER, WRAPS = 0, 1, 2, 3


def _files(*paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(os.path.join(*parts) for parts in paths)


#: Snapstate's modules that hand control to the program (see the module docstring), relative
#: to the folder holding both packages.
_HANDS_OVER_FILES = _files(
    ("snapstate_capture", "capture", "api.py"),
    ("snapstate_capture", "capture", "effects.py"),
    ("snapstate_capture", "capture", "retry.py"),
    ("snapstate_capture", "capture", "script.py"),
    ("snapstate_capture", "capture", "start_depth.py"),
    ("snapstate_capture", "integrations", "base.py"),
    ("snapstate_capture", "integrations", "calls.py"),
    ("snapstate_capture", "replay", "child.py"),
    ("snapstate_inspect", "commands", "record.py"),
)
#: Snapstate's hooks around library calls: transparent to the question "who called this?".
_WRAPS_FILES = _files(
    ("snapstate_capture", "capture", "nondeterminism.py"),
    ("snapstate_capture", "capture", "lineage.py"),
    ("snapstate_capture", "capture", "imports.py"),
    ("snapstate_capture", "integrations", "langgraph", "patches.py"),
    ("snapstate_capture", "integrations", "pydantic_ai", "patches.py"),
    ("snapstate_capture", "integrations", "openai_agents", "patches.py"),
)
#: The folder holding the packages, as imported and as resolved (``OWN_DIRS``).
_ROOTS = tuple(dict.fromkeys(os.path.dirname(folder)
                             for folder in (_PACKAGE_DIR, os.path.realpath(_PACKAGE_DIR))))
_own_kinds: dict[str, int] = {}


def own_kind(filename: str) -> int:
    """``NOT_OWN`` for a file that is not snapstate's, else ``MACHINERY``, ``HANDS_OVER`` or
    ``WRAPS`` (see the module docstring)."""
    kind = _own_kinds.get(filename)
    if kind is None:
        kind = NOT_OWN
        if not filename.startswith("<"):
            real = os.path.realpath(filename)
            if real.startswith(OWN_DIRS):
                root = next(r for r in _ROOTS if real.startswith(r + os.sep))
                relative = os.path.relpath(real, root)
                kind = (HANDS_OVER if relative in _HANDS_OVER_FILES
                        else WRAPS if relative in _WRAPS_FILES else MACHINERY)
        _own_kinds[filename] = kind
    return kind


def machinery_below(frame: Any, traced: Any = ()) -> bool:
    """True when ``frame`` or the nearest frame below it that decides is snapstate's
    machinery: walking down from ``frame``, a frame in ``traced`` (the program's, traced)
    decides False, a ``MACHINERY`` frame True, a ``HANDS_OVER`` frame False; ``WRAPS`` hooks
    and frames not snapstate's are looked through. False at the bottom."""
    while frame is not None:
        if frame in traced:
            return False
        kind = own_kind(frame.f_code.co_filename)
        if kind != NOT_OWN and kind != WRAPS:
            return kind == MACHINERY
        frame = frame.f_back
    return False


def mark_own_script(filename: str) -> None:
    """Count ``filename`` — the ``snapstate`` console script that started this process — as
    snapstate's machinery: never traced, and what it calls is no program step."""
    if filename.startswith("<"):
        return
    _own_kinds[filename] = MACHINERY
    _OWN_SCRIPTS.add(os.path.realpath(filename))
    for decisions in _DECISIONS.values():
        decisions.pop(filename, None)


#: Real paths of the console scripts ``mark_own_script`` was given.
_OWN_SCRIPTS: set[str] = set()


#: Decisions of every rule made in this process, by (include, exclude, cwd): a rule's answer
#: for a file name depends on nothing else, and a process often makes the same rule again —
#: ``pytest --snapstate`` records every test under a new one, and deciding each file of the
#: stack again (a ``realpath`` and a few ``fnmatch`` each) was ~5% of a suite of small tests.
_DECISIONS: dict[tuple[tuple[str, ...], tuple[str, ...], str], dict[str, bool]] = {}
#: File names a rule's decisions may hold before they are forgotten (``exec``'d code makes
#: names without end).
_MAX_DECISIONS = 50_000


#: ``os.path.realpath`` of directories rules were made in (a rule per test under ``pytest
#: --snapstate``, all in one directory: its four ``lstat`` calls were ~10% of a test's start).
_REAL_DIRECTORIES: dict[str, str] = {}


def _real_directory(path: str) -> str:
    real = _REAL_DIRECTORIES.get(path)
    if real is None:
        if len(_REAL_DIRECTORIES) > 256:
            _REAL_DIRECTORIES.clear()
        real = _REAL_DIRECTORIES[path] = os.path.realpath(path)
    return real


class IncludeRule:
    """``includes(filename) -> bool`` under one set of globs, decided once per file name in a
    process (``_DECISIONS``: shared by the rules made with the same globs and directory)."""

    def __init__(self, include: Iterable[str] = (), exclude: Iterable[str] = (),
                 cwd: str | None = None) -> None:
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.cwd = _real_directory(cwd or os.getcwd())
        self._cache = _DECISIONS.setdefault((self.include, self.exclude, self.cwd), {})

    def includes(self, filename: str) -> bool:
        decided = self._cache.get(filename)
        if decided is None:
            decided = self._decide(filename)
            if len(self._cache) >= _MAX_DECISIONS:
                self._cache.clear()
            self._cache[filename] = decided
        return decided

    def _decide(self, filename: str) -> bool:
        if filename.startswith("<"):
            return False  # <frozen ...>, <string>: no file to show
        real = os.path.realpath(filename)
        if real.startswith(OWN_DIRS) or real in _OWN_SCRIPTS:
            return False
        forms = (real, os.path.relpath(real, self.cwd), os.path.basename(real), filename)
        if any(fnmatch.fnmatch(form, glob) for glob in self.exclude for form in forms):
            return False
        if self.include:
            return any(fnmatch.fnmatch(form, glob) for glob in self.include for form in forms)
        if any(real.startswith(d + os.sep) for d in _LIBRARY_DIRS):
            return False
        if f"{os.sep}site-packages{os.sep}" in real or f"{os.sep}dist-packages{os.sep}" in real:
            return False
        return real.startswith(self.cwd + os.sep)


def preloaded_modules(rule: IncludeRule) -> list[str]:
    """Names of the modules already imported whose file ``rule`` traces, sorted: those a
    wrapper (``snapstate record``) imported before the program, whose bodies the program's
    own imports then do not run — a replay child imports them before it starts the program
    (``entry["preloaded"]``), or its imports would run and trace them (argparse, which
    ``snapstate record`` imports and a replay does not)."""
    names = []
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None) if module is not None else None
        if isinstance(filename, str) and rule.includes(filename):
            names.append(name)
    return sorted(names)
