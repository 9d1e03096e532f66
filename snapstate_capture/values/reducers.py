"""How particular types are written into payloads (the ``REDUCERS`` registry).

A reducer is ``reducer(obj) -> Refusal | reduce tuple | None``:

- ``Refusal(reason)``: never serialize this object; it becomes a placeholder at its path.
  Live machinery goes here (locks, generators, coroutines, tasks and futures, frames, open
  files and sockets): a copy would be wrong (a lock that is locked forever, a file reopened
  or truncated by dill on load) or impossible.
- a reduce tuple (as ``__reduce_ex__`` returns): write the object this way instead.
- None: no opinion; pickle's own reduction is used.

Reducers are used by the part-by-part path (``walk.py``); modules are also by reference in
the fast path (``payload.py``).
"""

from __future__ import annotations

import importlib
import marshal
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable

from . import rebuild
from .registry import TypeRegistry


@dataclass(frozen=True)
class Refusal:
    """A reducer's answer "do not serialize": ``reason`` is shown in the placeholder."""

    reason: str


Reducer = Callable[[Any], "Refusal | tuple | None"]
REDUCERS: TypeRegistry[Reducer] = TypeRegistry("reducers")
_MISSING = object()


def importable(obj: Any) -> bool:
    """True when ``obj`` (a class or function) is found again under its module and qualname,
    so pickle can write it by reference."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return False
    target: Any = sys.modules.get(module)
    if target is None:
        return False
    for part in qualname.split("."):
        target = getattr(target, part, _MISSING)
        if target is _MISSING:
            return False
    return target is obj


def module_reduce(module: types.ModuleType) -> tuple | None:
    """``import_module(name)`` for a module registered in ``sys.modules``, else None."""
    name = getattr(module, "__name__", None)
    if isinstance(name, str) and sys.modules.get(name) is module:
        return importlib.import_module, (name,)
    return None


def function_reduce(func: types.FunctionType) -> Any:
    """A function pickle cannot name (a closure, a local function, a lambda) as a reduction the
    C pickler writes: its marshaled code, module, names and cell count, then — as state, so a
    closure referring back to itself through its cells is written once — its defaults, cell
    contents and attributes (``rebuild.function_skeleton`` / ``fill_function``). dill wrote
    these in pure Python, copying the closure's whole world at every step; NotImplemented
    (the usual way) for a function whose code or module cannot be referred to."""
    module = func.__module__
    if not isinstance(module, str) or module not in sys.modules:
        return NotImplemented
    try:
        code = marshal.dumps(func.__code__)
    except ValueError:
        return NotImplemented
    contents = []
    for cell in func.__closure__ or ():
        try:
            contents.append(cell.cell_contents)
        except ValueError:  # an empty cell: a name the function refers to, not yet bound
            contents.append(rebuild.EMPTY_CELL)
    attributes = func.__dict__ or None
    return (rebuild.function_skeleton,
            (code, module, func.__name__, func.__qualname__, len(contents)),
            (func.__defaults__, func.__kwdefaults__, tuple(contents), attributes),
            None, None, rebuild.fill_function)


@REDUCERS.register(types.ModuleType)
def _module(module: types.ModuleType) -> Refusal | tuple:
    return module_reduce(module) or Refusal("module not importable by name")


@REDUCERS.register(types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
def _generator(gen: Any) -> Refusal:
    return Refusal(f"a running {type(gen).__name__} cannot be saved")


@REDUCERS.register(types.FrameType, types.TracebackType)
def _frame(obj: Any) -> Refusal:
    return Refusal(f"a live {type(obj).__name__} is never stored")


@REDUCERS.register("_thread.lock", "_thread.RLock", "threading._RLock")
def _lock(lock: Any) -> Refusal:
    return Refusal("a lock is live state: not serialized")


@REDUCERS.register("_asyncio.Future", "_asyncio.Task", "asyncio.futures.Future",
                   "asyncio.tasks.Task", "concurrent.futures._base.Future")
def _future(future: Any) -> Refusal:
    return Refusal(f"a pending {type(future).__name__} is live state: not serialized")


@REDUCERS.register("_io._IOBase", "socket.socket", "threading.Thread", "sqlite3.Connection")
def _resource(obj: Any) -> Refusal:
    return Refusal(f"an open {type(obj).__name__} is a resource, not data")


#: The reducers above that refuse an object by its type alone, whatever its state
#: (``capture/live_values.py`` relies on it: such an object's capture follows its preview).
REFUSED_BY_TYPE = frozenset({_generator, _frame, _lock, _resource})


@REDUCERS.register(memoryview)
def _memoryview(view: memoryview) -> Refusal | tuple:
    try:
        return memoryview, (view.tobytes(),)  # a copy: no buffer export is kept
    except ValueError:
        return Refusal("released memoryview")


@REDUCERS.register(BaseException)
def _exception(exc: BaseException) -> tuple:
    state = exc.__dict__ if type(getattr(exc, "__dict__", None)) is dict else None
    args = exc.args if type(exc.args) is tuple else ()
    return rebuild.new_exception, (type(exc), args), state or None


@REDUCERS.register(typing.TypeVar)
def _typevar(var: Any) -> tuple | None:
    module = getattr(var, "__module__", None)
    owner = sys.modules.get(module) if isinstance(module, str) else None
    if owner is not None and getattr(owner, var.__name__, None) is var:
        return None  # importable: pickle writes it by name
    return rebuild.make_typevar, (var.__name__, tuple(var.__constraints__), var.__bound__,
                                  bool(var.__covariant__), bool(var.__contravariant__))
