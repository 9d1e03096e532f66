"""What a payload writes by value: functions, bound methods and classes pickle cannot name.

A function or class that its module's namespace holds under its qualified name is pickled by
reference, its name alone. dill writes the rest by value, with everything they hold: a lambda
or closure (its cells, defaults and ``__dict__``), a function made by ``exec`` into a dict of
its own (attrs' generated ``__init__``, a template engine's: that dict too), a method bound to
an instance (the instance), a class defined in a function or not yet bound in its module (its
namespace and generated methods: ~3 ms a capture for a small attrs class, 12-06). What they
hold is then part of the value, so ``big_values.reach`` walks it (``_held_by_value``) and
weighs each such function (``big_values.by_value_weight``), and the tracer's frames re-check a
class by identity only when pickle names it (``call_frame._BY_IDENTITY``, ``local_class``).

Every answer is read statically — the interpreter's own C-level slots, ``sys.modules`` and
``inspect.getattr_static`` — so no code of the program runs (DESIGN.md "Capture rules").
"""

from __future__ import annotations

import inspect
import sys
import types
import weakref
from typing import Any

__all__ = ["local_class"]


def _held_by_value(leaf: Any, cls: type, globs: bool = True) -> list[Any] | None:
    """What a payload writes with a function or method of ``big_values._BY_VALUE`` met inside a
    value, for ``big_values.reach`` to walk: the instance a method is bound to, a function's
    closure cells, defaults and ``__dict__`` when it is pickled by value (``_by_value``) — a
    lambda kept in an object, whose closure holds a unittest ``TestCase`` and through it
    pytest's session, made a 60-object count of a 2 s capture at every call (more-itertools'
    ``callback_iter`` tests). The cells themselves are walked (a cell is no leaf). With
    ``globs``, the globals of a function made by ``exec`` too. None when ``leaf`` is written by
    reference. Reads C-level slots of the interpreter's own types: no program code runs."""
    try:
        if not _by_value(leaf, globs):
            return None
        if cls is types.FunctionType:
            own = leaf.__globals__ if globs and not _module_namespace(leaf) else None
            return [part for part in (leaf.__closure__, leaf.__defaults__, leaf.__kwdefaults__,
                                      leaf.__dict__, own) if part]
        return [leaf.__self__]
    except Exception:  # noqa: BLE001 - an unreadable leaf: counted as before, not walked
        return None


def _by_value(leaf: Any, exec_made: bool = True) -> bool:
    """True when a function or method of ``big_values._BY_VALUE`` is pickled with what it holds:
    a method bound to an instance (not a module or class), a function not importable by its
    qualified name, or one with a closure that is not found again under that name (a decorator's
    wrapper that is its module's global — ``@snap.step``, ``functools.wraps`` — is written by
    reference, and what its closure and globals reach is no part of it: they differ between a
    recording and its replay). Reads C-level slots and namespaces statically: no program code
    runs. ``exec_made``: a function whose globals are no module's namespace counts too
    (``CaptureOptions.bound_by_value``)."""
    if type(leaf) is types.FunctionType:
        if "<" in leaf.__qualname__:
            return True
        if exec_made and not _module_namespace(leaf):
            # made by exec, or a wrapper defined elsewhere (``@snap.step``'s, which
            # ``functools.wraps`` names after the function): by value unless found by name
            return not _found_by_name(leaf)
        return leaf.__closure__ is not None and not _found_by_name(leaf)
    try:
        owner = leaf.__self__
    except AttributeError:
        return False
    return not (owner is None or issubclass(type(owner), (types.ModuleType, type)))


def _module_namespace(func: types.FunctionType) -> bool:
    """Whether ``func``'s globals are its module's namespace (a function made by ``exec`` into
    a dict of its own — attrs' generated ``__init__``, a template engine's — is written by
    value with that dict). Reads ``sys.modules`` and the module's ``__dict__``: no code runs."""
    module = sys.modules.get(func.__module__) if isinstance(func.__module__, str) else None
    try:
        return module is not None and object.__getattribute__(module, "__dict__") \
            is func.__globals__
    except AttributeError:
        return False


#: ``Py_TPFLAGS_HEAPTYPE``: a class made at run time (by a ``class`` statement or ``type()``).
_HEAP_TYPE = 1 << 9
#: Classes met by ``reach`` and whether pickle cannot name them (``local_class``).
_LOCAL: "weakref.WeakKeyDictionary[type, bool]" = weakref.WeakKeyDictionary()


def local_class(cls: Any) -> bool:
    """Whether the class ``cls`` is one pickle cannot name — defined in a function, or not yet
    bound in its module (a class decorator's builder holds it, attrs' ``make_class`` made
    it) — which dill writes by value, namespace and generated methods included: ~3 ms a
    capture for a small attrs class (12-06). With ``by_value``, such a class as a value is
    weighed by its namespace (``BigValues.is_big``). Cached per class (a class found by name
    stays so); read statically (``type``'s own slots, ``inspect.getattr_static``)."""
    try:
        found = _LOCAL.get(cls)
    except TypeError:
        return False
    if found is None:
        try:
            if not type.__dict__["__flags__"].__get__(cls) & _HEAP_TYPE:
                _LOCAL[cls] = False  # a static type (NoneType, function): pickle's own
                return False
            name = type.__dict__["__module__"].__get__(cls)  # no code of the program runs
            qualname = type.__dict__["__qualname__"].__get__(cls)
        except Exception:  # noqa: BLE001 - an unreadable class: taken as named
            return False
        found = not _named(name, qualname, cls)
        if not found:
            _LOCAL[cls] = found  # by name now: by name for good (a local one may get bound)
    return found


def _found_by_name(func: types.FunctionType) -> bool:
    """Whether ``func`` is what its module's namespace holds under its qualified name, read
    statically (``inspect.getattr_static``: no module ``__getattr__``, no descriptor runs) —
    ``values.reducers.importable`` asks the same with ``getattr``, as pickle does, for the
    payload; here a name found only dynamically counts as not found (the value is counted)."""
    return _named(func.__module__, func.__qualname__, func)


def _named(module: Any, qualname: Any, obj: Any) -> bool:
    """Whether module ``module``'s namespace holds ``obj`` under ``qualname``, read statically
    (``inspect.getattr_static``); False for anything unreadable."""
    target: Any = sys.modules.get(module) if isinstance(module, str) else None
    try:
        for part in qualname.split("."):
            if target is None:
                return False
            target = inspect.getattr_static(target, part, None)
    except Exception:  # noqa: BLE001 - a namespace that cannot be read: not by name
        return False
    return target is obj
