"""Which files the tracer traces: ``include``/``exclude`` globs and the default, the user's code.

Default (issue 6 point 2): files under the current directory, except the standard library,
site-packages and snapstate itself (wherever those live). With ``include`` globs, exactly the
files matching one of them are traced instead. ``exclude`` globs always win. A glob is matched
(``fnmatch``) against the absolute path, the path relative to the current directory and the
file's base name, so ``--include '*/json/*'``, ``--include 'agent/*.py'`` and
``--include tool.py`` all work. Snapstate's own files are never traced.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable

from ..capture.frames import _INSPECT_DIR, _LIBRARY_DIRS, _PACKAGE_DIR


class IncludeRule:
    """``includes(filename) -> bool`` under one set of globs, decided once per file name."""

    def __init__(self, include: Iterable[str] = (), exclude: Iterable[str] = (),
                 cwd: str | None = None) -> None:
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.cwd = os.path.realpath(cwd or os.getcwd())
        self._cache: dict[str, bool] = {}

    def includes(self, filename: str) -> bool:
        decided = self._cache.get(filename)
        if decided is None:
            decided = self._decide(filename)
            self._cache[filename] = decided
        return decided

    def _decide(self, filename: str) -> bool:
        if filename.startswith("<"):
            return False  # <frozen ...>, <string>: no file to show
        real = os.path.realpath(filename)
        if real.startswith((_PACKAGE_DIR + os.sep, _INSPECT_DIR + os.sep)):
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
