"""Guarded, bounded ``repr``: a raising or slow ``__repr__`` never hurts the program.

A raising ``__repr__`` gives ``<repr failed: ErrorType: message>``.

A *slow* ``__repr__`` cannot be interrupted safely: signals (``SIGALRM``) work only in the main
thread and would fire inside arbitrary user code; a helper thread cannot stop the call and would
run user code concurrently with the program; a trace-function deadline would clobber the user's
debugger or coverage tracer and could leave the object half-updated. So the first slow call
costs its time once: each user ``repr`` is timed, and a class whose ``repr`` took longer than
``ValueOptions.slow_repr_seconds`` is remembered (process-wide, weakly, by class). From then on
its ``repr`` is never called again; the preview says ``<repr failed: SlowRepr: …>`` every time,
including the first, so two captures of the same value give the same preview. A class whose
repr wrote more than ``HUGE_REPR`` characters is not called again either (a length, unlike a
time, is the same in a run and its replay).
"""

from __future__ import annotations

import contextlib
import types
import weakref
from typing import Any

from ..clocks import Clocks
from .registry import class_name
from .static import own_namespace, static_attributes

#: Classes whose ``__repr__`` was slow: class -> seconds the slow call took.
_SLOW: weakref.WeakKeyDictionary[type, float] = weakref.WeakKeyDictionary()
#: Characters of a user ``__repr__``'s text above which the class's repr is not called again
#: (``_HUGE``): a repr's cost grows with its text, and a preview keeps a few hundred of them.
#: sortedcontainers' ``SortedList`` of 50,000 items writes ~500 kB in ~40 ms, called at every
#: traced step that showed it (helper-39: 0.19 s plain, 154 s recorded). Unlike a time, the
#: length is the same in a run and its replay.
HUGE_REPR = 50_000
#: Classes whose ``__repr__`` wrote more than ``HUGE_REPR`` characters: class -> how many.
_HUGE: weakref.WeakKeyDictionary[type, int] = weakref.WeakKeyDictionary()

#: Classes whose repr is C code of the interpreter, never slow and never user code.
_TRUSTED_REPR = frozenset({int, float, complex, bool, type(None), type(Ellipsis),
                           type(NotImplemented), range, slice})
#: Classes whose repr is the interpreter's C code reading only names and addresses — never
#: user code — but not plain data: not timed. A call timed slow would be the machine's
#: doing (the process descheduled, the GIL held elsewhere, a garbage collection), and would
#: turn the class's every repr into ``SlowRepr`` for the rest of the process: under load a
#: replay read ``<function …>`` as ``<repr failed: SlowRepr: took 0.60 s; …>`` and diverged.
_UNTIMED_REPR = frozenset({
    type, types.FunctionType, types.BuiltinFunctionType, types.CodeType, types.CellType,
    types.WrapperDescriptorType, types.MethodWrapperType, types.MethodDescriptorType,
    types.ClassMethodDescriptorType, types.GetSetDescriptorType, types.MemberDescriptorType,
})
_OBJECT_REPR = object.__repr__
#: Modules whose iterator types ``live_iterator_held`` knows (C iterators: reading one
#: advances it), and ``type``'s own descriptors for a class's module and name.
_ITERATOR_MODULES = frozenset({"builtins", "itertools"})
_TYPE_MODULE = type.__dict__["__module__"]
_TYPE_NAME = type.__dict__["__name__"]


def clip(text: str, limit: int) -> str:
    """Return ``text`` cut to ``limit`` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def exc_text(exc: BaseException) -> str:
    """``str(exc)``, or ``"?"`` when even that raises."""
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - str() of a hostile exception
        return "?"


def failed(exc: BaseException) -> str:
    """The repr text shown for a ``__repr__`` that raised ``exc``. A ``RecursionError`` is
    shown without its message: CPython says "maximum recursion depth exceeded" with or without
    "while getting the str of an object" after how deep the stack was when the repr began,
    which differs between a run and its replay (simpy's ``Timeout`` before its ``__init__``
    ran, helper-39: a divergence 5 of 5)."""
    if isinstance(exc, RecursionError):
        return "<repr failed: RecursionError: maximum recursion depth exceeded>"
    return f"<repr failed: {type(exc).__name__}: {clip(exc_text(exc), 100)}>"


def slow_repr_note(cls: type) -> str | None:
    """The repr text for a class remembered as slow, or whose repr ran past ``HUGE_REPR``
    characters; None for any other."""
    try:
        took = _SLOW.get(cls)
        size = _HUGE.get(cls)
    except TypeError:
        return None
    if took is not None:
        return f"<repr failed: SlowRepr: took {took:.2f} s; not called again>"
    if size is not None:
        return (f"<{getattr(cls, '__name__', '?')}: repr not called again: "
                f"one ran to {size:,} characters>")
    return None


def safe_repr(obj: Any, limit: int, slow_seconds: float | None = None) -> str:
    """Return ``repr(obj)`` bounded to ``limit`` characters; never raises.

    Strings and bytes are cut before ``repr`` so a 10 MB string costs no more than a short one.
    With ``slow_seconds``, the call is timed and a slow class is remembered (module docstring).
    """
    cls = type(obj)
    try:
        if cls in _TRUSTED_REPR:
            return clip(repr(obj), limit)
        if issubclass(cls, str):
            if len(obj) > limit:
                return clip(repr(str.__getitem__(obj, slice(0, limit))), limit)
            return clip(str.__repr__(obj), limit) if cls is not str else clip(repr(obj), limit)
        if issubclass(cls, (bytes, bytearray)) and len(obj) > limit:
            return clip(repr(bytes(obj[:limit])), limit)
        if cls in _UNTIMED_REPR or cls.__repr__ is _OBJECT_REPR:
            return clip(repr(obj), limit)  # the last: ``<Foo object at 0x…>``, C code too
        held = live_iterator_held(obj)
        if held is not None:
            return f"<repr not called: it could advance {held}>"
        if slow_seconds is None:
            return clip(repr(obj), limit)
        note = slow_repr_note(cls)
        if note is not None:
            return note
        start = Clocks.perf_counter()
        text = repr(obj)
        took = Clocks.perf_counter() - start
        if took > slow_seconds:
            try:
                _SLOW[cls] = took
            except TypeError:
                return f"<repr failed: SlowRepr: took {took:.2f} s>"
            return slow_repr_note(cls) or "<repr failed: SlowRepr>"
        if len(text) > HUGE_REPR and type(text) is str:
            with contextlib.suppress(TypeError):  # (a class no weak reference can hold)
                _HUGE[cls] = len(text)  # this text is shown; the next call is not made
        return clip(text, limit)
    except Exception as exc:  # noqa: BLE001 - a user's __repr__ may raise anything
        return failed(exc)


def live_iterator_held(obj: Any) -> str | None:
    """Name the first instance attribute of ``obj`` (read statically) that holds a live
    iterator — a generator, or an iterator of the interpreter's own (``map``, a list
    iterator, ``itertools.chain`` …) — as ``".name (a generator)"``; None when there is none.

    A ``__repr__`` that reads such an attribute consumes it: sqlparse's ``Statement`` holds
    its output filter's generator in ``.tokens`` and its repr joins the tokens, so a captured
    repr emptied ``sqlparse.format(sql, output_format="python")``. Such an object's repr is
    not called. Only the object's own attributes are looked at, not what they hold."""
    attributes = static_attributes(obj)
    for name, value in attributes or ():
        kind = _live_iterator_kind(type(value))
        if kind is not None:
            return f".{name} ({kind})"
    return None


def _live_iterator_kind(cls: type) -> str | None:
    """``"a generator"``, ``"a map iterator"``, ``"a list_iterator"`` … for the interpreter's iterator types (read
    through ``type``'s own slots: no metaclass code runs), else None."""
    if cls is types.GeneratorType:
        return "a generator"
    try:
        module = _TYPE_MODULE.__get__(cls)
        if module in _ITERATOR_MODULES and "__next__" in own_namespace(cls):
            name = _TYPE_NAME.__get__(cls)
            return f"a {name}" if name.endswith("iterator") else f"a {name} iterator"
    except Exception:  # noqa: BLE001 - an exotic class: not an iterator of ours to know
        return None
    return None


def type_name(obj: Any) -> str:
    """Return ``module.qualname`` of ``type(obj)`` (``builtins.`` kept for uniformity)."""
    return class_name(type(obj))
