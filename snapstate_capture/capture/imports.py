"""Run a callback right after a module is imported (a post-import hook), or at once if it is.

``when_imported("langchain_core.tools.base", patch)`` calls ``patch(module)`` now when the
module is in ``sys.modules``, else as soon as its import has executed it. A framework the
program imports after ``snap.record(...)`` started — the usual case under ``snapstate
record``, where the recorded script's own imports come later — is thus set up without
importing anything the program does not import itself.

The hook is one finder at the front of ``sys.meta_path`` that answers only for the module
names waited for: it asks the other finders for the real spec and wraps its loader so that
``exec_module`` calls the callbacks afterwards. Everything else the loader has is passed
through. ``stop()`` removes the finder and forgets what was waited for; callbacks that
already ran are not undone. A failing callback never fails the import.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import types
from typing import Any, Callable

Callback = Callable[[types.ModuleType], None]

_lock = threading.RLock()
_waiting: dict[str, list[Callback]] = {}
_finding = threading.local()


def when_imported(name: str, callback: Callback) -> None:
    """Call ``callback(module)`` once module ``name`` is imported (now, if it is)."""
    with _lock:
        module = sys.modules.get(name)
        if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
            _waiting.setdefault(name, []).append(callback)
            if _FINDER not in sys.meta_path:
                sys.meta_path.insert(0, _FINDER)
            return
    _run(callback, module)


def waiting() -> list[str]:
    """The module names still waited for."""
    with _lock:
        return sorted(_waiting)


def stop() -> None:
    """Forget every pending callback and remove the finder."""
    with _lock:
        _waiting.clear()
        while _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)


def _run(callback: Callback, module: types.ModuleType) -> None:
    try:
        callback(module)
    except Exception as exc:  # noqa: BLE001 - the import the program asked for must succeed
        try:
            sys.stderr.write(f"snapstate: note: could not set up an integration for "
                             f"{module.__name__}: {type(exc).__name__}: {exc}\n")
        except Exception:  # noqa: BLE001
            pass


class _Finder(importlib.abc.MetaPathFinder):
    """Answers for waited-for names only, with the real spec and a wrapping loader."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in _waiting or getattr(_finding, "name", None) == fullname:
            return None
        _finding.name = fullname
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        finally:
            _finding.name = None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, fullname)
        return spec


class _Loader(importlib.abc.Loader):
    """Delegates to the real loader; after ``exec_module``, runs the callbacks."""

    def __init__(self, loader: Any, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        try:
            module.__loader__ = self._loader  # the module sees its real loader
            if module.__spec__ is not None:
                module.__spec__.loader = self._loader
        except (AttributeError, TypeError):
            pass
        self._loader.exec_module(module)
        with _lock:
            callbacks = _waiting.pop(self._name, [])
            if not _waiting:
                while _FINDER in sys.meta_path:
                    sys.meta_path.remove(_FINDER)
        for callback in callbacks:
            _run(callback, module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


_FINDER = _Finder()
