"""Functions that payloads call when they are loaded: part of the payload format.

A payload written by ``walk.py`` / ``payload.py`` refers to these by their importable names
(``snapstate_capture.values.rebuild.<name>``), so they are never renamed or removed; a new way
of rebuilding gets a new function.
"""

from __future__ import annotations

import importlib
import typing
from typing import Any


def resolve_global(module: str, qualname: str) -> Any:
    """Return the object named ``qualname`` in module ``module`` (imported if needed).

    Used for classes and functions of ``__main__``, which dill would otherwise copy by value
    (a copy breaks identity: ``Color.RED is Color.RED`` must hold after a load)."""
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def new_exception(cls: type, args: tuple) -> BaseException:
    """Create an exception of ``cls`` holding ``args`` without calling ``cls.__init__``.

    Pickle's default rebuild is ``cls(*exc.args)``, which fails for an exception whose
    ``__init__`` takes other arguments than it passes to ``BaseException.__init__``."""
    try:
        exc = cls.__new__(cls, *args)
    except Exception:  # noqa: BLE001 - a __new__ with its own signature: use the base one
        exc = BaseException.__new__(cls)
    exc.args = args
    return exc


def restore_state(obj: Any, state: Any) -> None:
    """Set instance attributes from pickle ``state`` (a dict, or ``(dict, slots dict)``)
    directly, without looking up ``__setstate__`` on the instance.

    Used for classes with a ``__getattr__`` that would recurse while an instance is empty."""
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        object.__getattribute__(obj, "__dict__").update(state)
    for name, value in (slots or {}).items():
        object.__setattr__(obj, name, value)


def make_typevar(name: str, constraints: tuple, bound: Any, covariant: bool,
                 contravariant: bool) -> Any:
    """Recreate a ``TypeVar`` that was not importable (created inside a function)."""
    return typing.TypeVar(name, *constraints, bound=bound, covariant=covariant,
                          contravariant=contravariant)


def function_skeleton(code_bytes: bytes, module: str, name: str, qualname: str,
                      cells: int) -> Any:
    """A function of marshaled ``code_bytes`` whose globals are those of ``module`` (imported;
    ``__main__``: the loading process's main module) and ``cells`` empty closure cells, to be
    filled by ``fill_function`` once the parts it refers to exist (a closure may refer back to
    itself through them). Used for functions pickle cannot name: local functions, closures,
    lambdas — written by the C pickler instead of dill."""
    import marshal
    import sys
    import types

    code = marshal.loads(code_bytes)
    owner = sys.modules.get(module) or importlib.import_module(module)
    closure = tuple(types.CellType() for _ in range(cells)) or None
    func = types.FunctionType(code, owner.__dict__, name, None, closure)
    func.__qualname__ = qualname
    return func


#: Marks a closure cell that held nothing (a name not yet bound) in ``fill_function``'s state.
EMPTY_CELL = "snapstate.empty-cell"


def fill_function(func: Any, state: tuple) -> None:
    """Set a ``function_skeleton``'s defaults, keyword defaults, cell contents and attributes
    from ``state``."""
    defaults, kwdefaults, contents, attributes = state
    func.__defaults__ = defaults
    func.__kwdefaults__ = kwdefaults
    for cell, value in zip(func.__closure__ or (), contents):
        if not (isinstance(value, str) and value == EMPTY_CELL):
            cell.cell_contents = value
    if attributes:
        func.__dict__.update(attributes)
