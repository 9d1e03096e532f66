"""Hypothesis' deadline while ``pytest --snapstate`` records: off, as a debugger user expects.

Hypothesis fails a test when one of its examples runs longer than ``settings.deadline`` (200
ms unless a profile says otherwise). A recorded test runs tens of times slower than a plain one
(each call of the user's code is a step whose locals are captured), so suites that pass fail
under ``--snapstate`` with ``DeadlineExceeded`` or "Unreliable test timings" — attrs 26.1.0's
own suite, whose profile sets 400 ms: 7 of 1,377 tests — and the timelines kept show the
recording's slowness, not a bug. pytest-timeout makes the same choice for its timeouts when a
debugger is attached.

``lift()`` derives a profile from the current one with ``deadline=None`` and loads it, named
``<current>-snapstate`` (Hypothesis' own pytest plugin derives profiles from its options the
same way); every other setting of the user's profile stays. Hypothesis copies the default
settings into a test when ``@given`` decorates it, at import, so the profile must change before
test modules are imported: ``lift_while_recording`` lifts at once when hypothesis is already
imported (a conftest that loads a profile has run by then), else right after hypothesis' first
import (``_AfterImport``). A test's own ``@settings(deadline=...)`` is its author's explicit
choice and stays.
"""

from __future__ import annotations

import importlib.abc
import sys
from typing import Any

#: The suffix of the profile ``lift`` loads.
SUFFIX = "-snapstate"


def lift() -> bool:
    """Load a copy of Hypothesis' current profile with ``deadline=None``; True when one was
    loaded (False: the deadline is off already, or hypothesis could not be asked). Never
    raises."""
    try:
        from hypothesis import settings

        if settings.default.deadline is None:
            return False
        current = getattr(settings, "get_current_profile_name", lambda: "default")()
        name = current if current.endswith(SUFFIX) else current + SUFFIX
        settings.register_profile(name, deadline=None)  # parent: the current profile
        settings.load_profile(name)
        return True
    except Exception:  # noqa: BLE001 - an old or odd hypothesis: its deadline stays
        return False


def lift_while_recording() -> None:
    """Lift the deadline now if hypothesis is imported, else just after its first import."""
    if "hypothesis" in sys.modules:
        lift()
    elif not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: at ``import hypothesis`` it takes the spec the finders after it
    give and has ``lift`` run once the package's ``__init__`` has run; then it leaves
    ``sys.meta_path`` (a mere ``importlib.util.find_spec`` executes nothing and leaves it
    in place)."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "hypothesis":
            return None
        for finder in sys.meta_path:
            if isinstance(finder, _AfterImport) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _LiftAfterExec(spec.loader)
        return spec


class _LiftAfterExec(importlib.abc.Loader):
    """The package's own loader, with ``lift`` after it executed the module; anything else
    (``get_source``, ``get_filename``, …) is the wrapped loader's."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterImport)]
        lift()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
