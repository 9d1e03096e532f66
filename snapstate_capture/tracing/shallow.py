"""Shallow forms: a cheap check that an object met again at a call step is as it was last stored.

Call tracing stores every local of a traced frame at its call step and catches its callers up
at each call (``call_frame.CallFrame.refresh``). The same objects come back again and again —
pyflakes hands the same AST node to ``handleNode``, its handler and the handler's helpers, each
frame holds its ``Checker`` — and checking each one in full (pickling it to compare its digest,
~40 µs for an AST node with its subtree) was most of a traced call's cost.

The *shallow form* of an object is its class and, for each attribute read statically
(``values.static``: no property or ``__getattr__`` runs), the attribute's value when it is a
builtin scalar, else its identity, plus the length of a builtin list, dict, set or bytearray;
a dict, list or set subclass adds the identities of its items. ``ValueEncoder.quick``
reuses the reference an object's last full capture gave while its shallow form is unchanged.
A caller's builtin list, tuple, dict or set is caught up by its *container form*, the
identities of its items in order (``container_form``; ``CallFrame._snapshot_one``): an
index the caller left alone is not copied and hashed again at each call of a sort key.

What it does not see: an object changed in place two levels down or deeper, or a builtin
container changed without a change of its length (``node.body[0] = other``,
``self.counts[key] += 1`` on an existing key) — when no step of its own stored the object
since. Such a change is stored at the frame's own next step: a ``return`` or ``exception``
step checks every local in full, as does every explicit step (docs/storage.md,
"Call tracing"). Only objects whose class pickles plainly (their state is their attributes) and
that can be weakly referenced take this path; anything else is checked in full every time.
"""

from __future__ import annotations

import copyreg
import sys
import types
from typing import Any

from ..values.static import static_attributes

__all__ = ["CONTAINERS", "ShallowForms", "container_form"]

_SCALARS = frozenset({int, float, bool, type(None), str, bytes, complex})
_SIZED = frozenset({list, dict, set, bytearray, frozenset, tuple})
#: Functions and methods: their state is their closure or the object they are bound to, not
#: their attributes (``bounded._BY_VALUE``); modules and code go by name.
_BY_VALUE = frozenset({types.FunctionType, types.MethodType, types.BuiltinFunctionType,
                       types.MethodWrapperType, types.ModuleType, types.CodeType,
                       types.FrameType})
_PLAIN_REDUCE = object.__reduce_ex__


def _pickles_plainly(cls: type) -> bool:
    """Whether instances of ``cls`` are saved as their attributes: plain pickling, or an
    ``ast`` node (whose C ``__reduce__`` saves its ``__dict__``). Compares by identity only."""
    ast = sys.modules.get("ast")
    reduce = getattr(cls, "__reduce__", None)
    return (getattr(cls, "__reduce_ex__", None) is _PLAIN_REDUCE
            and (reduce is object.__reduce__ or ast is not None and reduce is ast.AST.__reduce__)
            and getattr(cls, "__getstate__", object.__getstate__) is object.__getstate__
            and copyreg.dispatch_table.get(cls) is None)


#: Builtin containers a caller's catch-up compares by their items' identities.
CONTAINERS = frozenset({list, tuple, dict, set, frozenset})


def container_form(obj: Any) -> Any:
    """The items of a builtin list, tuple, dict or set (a type in ``CONTAINERS``) by identity,
    in order (a set's as a set): equal forms mean the same objects in the same places — the
    same content exactly when they are immutable scalars; a change inside an item is not seen
    (module docstring). C-speed scans, no code of the program runs."""
    cls = type(obj)
    if cls is dict:
        return (tuple(map(id, obj)), tuple(map(id, obj.values())))
    if cls is set or cls is frozenset:
        return frozenset(map(id, obj))
    return tuple(map(id, obj))


class ShallowForms:
    """The shallow forms of one recording's objects: ``form(obj)`` (module docstring), with
    whether a class pickles plainly decided once per class — for this recording only, so no
    class outlives it here."""

    def __init__(self) -> None:
        self._plain: dict[type, bool] = {}

    def form(self, obj: Any) -> tuple | None:
        """The shallow form of ``obj``: a tuple of its class, builtin scalars and ints,
        compared with ``==`` without running any of the program's code; None when ``obj`` has
        none (a builtin container — checked in full, at C speed, by its marshal copy — a
        function or class, a class with its own pickling, an object without attributes).
        Never raises."""
        cls = type(obj)
        if cls in _SIZED or cls in _SCALARS or cls in _BY_VALUE or isinstance(obj, type):
            return None
        plain = self._plain.get(cls)
        if plain is None:
            plain = self._plain[cls] = _pickles_plainly(cls)
        if not plain:
            return None
        try:
            attrs = static_attributes(obj)
            if attrs is None:
                return None
            form: list[Any] = [cls]
            add = form.append
            for name, value in attrs:
                kind = type(value)
                add(name)
                if kind in _SCALARS:
                    add(kind)
                    add(value)
                elif kind in _SIZED:
                    add(id(value))
                    add(len(value))
                else:
                    add(id(value))
            if isinstance(obj, dict):
                add(dict.__len__(obj))
                form.extend(map(id, dict.keys(obj)))
                form.extend(map(id, dict.values(obj)))
            elif isinstance(obj, list):
                add(list.__len__(obj))
                form.extend(map(id, list.__iter__(obj)))
            elif isinstance(obj, (set, frozenset)):
                add(set.__len__(obj) if isinstance(obj, set) else frozenset.__len__(obj))
            return tuple(form)
        except Exception:  # noqa: BLE001 - changed while read (another thread): checked in full
            return None
