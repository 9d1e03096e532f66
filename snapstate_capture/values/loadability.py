"""Judging whether a payload will load — without running any of the program's code.

Loading a pickle runs the reconstructors it names (``__reduce__`` callables, ``__setstate__``,
``__new__``): user code, which capture must never run (DESIGN.md "Capture rules"). So the check
made after serializing a value is a **shadow load**: the C unpickler reads the payload with a
``find_class`` that returns one inert stand-in (``_Shadow``) for every global, so the only code
it can call is ours, while every global the payload names — module and qualified name; dill
writes the same opcodes — is looked up the way the unpickler would find it, but statically:
the module must already be imported (``sys.modules``: nothing is imported here) and each name
is read with ``inspect.getattr_static``, so no module ``__getattr__``, property or descriptor
runs.

A global that is certainly absent (its module is imported, has no module-level
``__getattr__``, and lacks the name) makes the payload "not loadable"; a global that cannot be
judged without running code (a module not imported, a lazy module) leaves the payload
untested. What no static reading can tell — a ``__setstate__`` that raises — is found only when
the payload is loaded with trust, never while recording.
"""

from __future__ import annotations

import inspect
import io
import pickle
import sys
from typing import Any


class _Shadow:
    """What every global of a judged payload becomes: accepts whatever the unpickler does with a
    class, a reconstructor or the object they make, and does nothing."""

    def __new__(cls, *args: Any, **kwargs: Any) -> _Shadow:
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        pass

    def append(self, item: Any) -> None:
        pass

    def extend(self, items: Any) -> None:
        pass

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


class _ShadowUnpickler(pickle.Unpickler):
    """Records every ``(module, name)`` asked for and hands out ``_Shadow`` instead."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.names: set[tuple[str, str]] = set()

    def find_class(self, module: str, name: str) -> Any:
        self.names.add((module, name))
        return _Shadow

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not ours")


def judge(data: bytes) -> tuple[bool | None, str | None]:
    """``(True, None)`` when every global the pickle ``data`` names is found; ``(False,
    "not loadable: …")`` when one is certainly missing; ``(None, None)`` when it cannot be
    judged without running code (or the bytes do not read as a pickle). Never raises, never
    imports, never runs the program's code."""
    names = globals_named(data)
    if names is None:
        return None, None
    verdict: tuple[bool | None, str | None] = (True, None)
    for module, qualname in sorted(names):
        found = _find(module, qualname)
        if found is False:
            return False, f"not loadable: {module}.{qualname} cannot be found"
        if found is None:
            verdict = (None, None)
    return verdict


def globals_named(data: bytes) -> set[tuple[str, str]] | None:
    """Every ``(module, qualname)`` the pickle ``data`` refers to (a shadow load: see the
    module docstring); None when it does not read as a pickle."""
    reader = _ShadowUnpickler(data)
    try:
        reader.load()
    except Exception:  # noqa: BLE001 - malformed, or our stand-in refused an operation
        return None
    return reader.names


#: ``(module, qualified name) -> the module object`` of globals found (``_find``): a payload of
#: an AST subtree names a dozen node classes, each read statically again at every capture.
#: A name found stays found while its module is the same object (one deleted from its module
#: afterwards is then reported only when the payload is loaded); the cache is bounded.
_FOUND: dict[tuple[str, str], Any] = {}
_FOUND_LIMIT = 4096


def _find(module_name: str, qualname: str) -> bool | None:
    """True when ``module_name.qualname`` is there, False when certainly not, None when it
    cannot be told without importing or running code."""
    module = sys.modules.get(module_name)
    if module is None:
        return None  # loading would import it: that runs its code, so it is not judged here
    key = (module_name, qualname)
    if _FOUND.get(key) is module:
        return True
    found = _find_in(module, qualname)
    if found:
        if len(_FOUND) >= _FOUND_LIMIT:
            _FOUND.clear()
        _FOUND[key] = module
    return found


def _find_in(module: Any, qualname: str) -> bool | None:
    """``_find`` in the imported ``module``: each part of ``qualname`` read statically."""
    target: Any = module
    for position, part in enumerate(qualname.split(".")):
        try:
            target = inspect.getattr_static(target, part)
        except AttributeError:
            lazy = position == 0 and "__getattr__" in getattr(module, "__dict__", {})
            return None if lazy else False
        except Exception:  # noqa: BLE001 - a hostile __dict__/__mro__: not judged
            return None
        if type(target) in (staticmethod, classmethod):
            target = target.__func__  # their own C attribute: no user code
    return True
