"""Previews: safe, bounded, JSON-only descriptions of captured objects.

A preview is what the inspector shows and diffs without running any code from the file. Shape
(every key but ``type`` and ``repr`` optional)::

    {"type": "module.qualname",         # the object's class, by name
     "repr": "bounded repr",            # at most ValueOptions.max_repr characters
     "len": 200,                        # len() of sized builtins
     "children": [[label, preview], …], # label is the path suffix: "[3]", "['k']", ".attr", "{0}"
     "more": 150,                       # children left out by max_items
     "truncated": true,                 # children left out by max_depth
     "redacted": true,                  # value hidden because its name matches a secret pattern
     "placeholder": {"reason": …, "path": …}}   # set by the payload side, see payload.py

Building a preview never runs the object's own code except a guarded ``__repr__`` of non-builtin
objects: attributes are read from the instance dict and slot descriptors only, containers are
iterated through the builtin type's own methods (so overrides in subclasses are not called), and
no property, ``__getattr__`` or ``cached_property`` is evaluated (DESIGN.md "Capture rules").
"""

from __future__ import annotations

import dataclasses
import itertools
import types
from typing import Any

from ..options import ValueOptions

_SCALARS = (int, float, complex, bool, type(None), type(Ellipsis), type(NotImplemented))
_TEXT = (str, bytes, bytearray)
REDACTED_REPR = "<redacted>"


def type_name(obj: Any) -> str:
    """Return ``module.qualname`` of ``type(obj)`` (``builtins.`` kept for uniformity)."""
    cls = type(obj)
    module = getattr(cls, "__module__", None) or "?"
    qualname = getattr(cls, "__qualname__", None) or cls.__name__
    return f"{module}.{qualname}"


def clip(text: str, limit: int) -> str:
    """Return ``text`` cut to ``limit`` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def safe_repr(obj: Any, limit: int) -> str:
    """Return ``repr(obj)`` bounded to ``limit`` characters; never raises.

    A raising ``__repr__`` gives ``<repr failed: ErrorType: message>``. Strings and bytes are
    cut before ``repr`` so a 10 MB string costs no more than a short one.
    """
    try:
        cls = type(obj)
        if issubclass(cls, str) and len(obj) > limit:
            return clip(repr(str.__getitem__(obj, slice(0, limit))), limit)
        if issubclass(cls, (bytes, bytearray)) and len(obj) > limit:
            return clip(repr(bytes(obj[:limit])), limit)
        return clip(repr(obj), limit)
    except BaseException as exc:  # noqa: BLE001 - a user's __repr__ may raise anything
        return f"<repr failed: {type(exc).__name__}: {clip(_exc_text(exc), 100)}>"


def _exc_text(exc: BaseException) -> str:
    try:
        return str(exc)
    except BaseException:  # noqa: BLE001 - str() of a hostile exception
        return "?"


def static_attributes(obj: Any) -> list[tuple[str, Any]] | None:
    """Return the object's instance attributes as ``(name, value)`` pairs, read statically.

    Reads the instance ``__dict__`` (only through the standard descriptor) and every ``__slots__``
    member descriptor of the class hierarchy. Returns None for objects with neither. Never calls
    properties, ``__getattr__`` or ``__getattribute__`` overrides.
    """
    cls = type(obj)
    found: list[tuple[str, Any]] = []
    has_any = False
    dict_descr = _class_lookup(cls, "__dict__")
    if dict_descr is not None and type(dict_descr).__name__ == "getset_descriptor":
        try:
            instance_dict = dict_descr.__get__(obj, cls)
        except BaseException:  # noqa: BLE001 - a C type without an instance dict
            instance_dict = None
        if type(instance_dict) is dict:
            has_any = True
            found.extend((str(k), v) for k, v in dict.items(instance_dict))
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__")
        if slots is None:
            continue
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            descr = klass.__dict__.get(slot)
            if type(descr).__name__ != "member_descriptor":
                continue
            has_any = True
            try:
                found.append((slot, descr.__get__(obj, cls)))
            except AttributeError:
                continue  # slot never assigned
    return found if has_any else None


def _class_lookup(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


class PreviewBuilder:
    """Builds previews under one ``ValueOptions``; stateless apart from its options.

    ``build(obj)`` returns the preview dict. Cycles are cut (a container met again on the current
    path shows as ``<cycle>``), depth and width are bounded, and every user ``__repr__`` is guarded.
    """

    def __init__(self, options: ValueOptions) -> None:
        self.options = options

    def build(self, obj: Any, name: str | None = None) -> dict[str, Any]:
        """Return the preview of ``obj``; redacted when ``name`` matches a secret pattern."""
        if name is not None and self.options.is_secret(name):
            return redacted_preview(obj)
        return self._node(obj, 0, set())

    def _node(self, obj: Any, depth: int, path_ids: set[int]) -> dict[str, Any]:
        opts = self.options
        cls = type(obj)
        node: dict[str, Any] = {"type": type_name(obj)}
        if issubclass(cls, _SCALARS):
            node["repr"] = safe_repr(obj, opts.max_repr)
            return node
        if issubclass(cls, _TEXT):
            node["repr"] = safe_repr(obj, min(opts.max_string, opts.max_repr)
                                     if depth else opts.max_string)
            node["len"] = len(obj)
            return node
        if id(obj) in path_ids:
            node["repr"] = "<cycle>"
            return node
        children = self._children(obj, cls)
        if children is None:
            node["repr"] = safe_repr(obj, opts.max_repr)
            return node
        items, total = children
        if total is not None:
            node["len"] = total
        if depth >= opts.max_depth:
            node["repr"] = self._container_repr(obj, cls, items, total, depth=None)
            if items or total:
                node["truncated"] = True
            return node
        path_ids.add(id(obj))
        try:
            kids = [[label, self._child(label, value, depth, path_ids)] for label, value in items]
        finally:
            path_ids.discard(id(obj))
        node["children"] = kids
        shown = len(kids)
        if total is not None and total > shown:
            node["more"] = total - shown
        node["repr"] = self._container_repr(obj, cls, items, total, kids)
        return node

    def _child(self, label: str, value: Any, depth: int, path_ids: set[int]) -> dict[str, Any]:
        key = label.lstrip(".[{").rstrip("]}").strip("'\"")
        if self.options.is_secret(key):
            return redacted_preview(value)
        return self._node(value, depth + 1, path_ids)

    def _children(self, obj: Any, cls: type) -> tuple[list[tuple[str, Any]], int | None] | None:
        """Return (labelled children, total count or None) for containers; None for leaves."""
        limit = self.options.max_items
        try:
            if issubclass(cls, dict):
                pairs = itertools.islice(dict.items(obj), limit)
                return ([(f"[{safe_repr(k, 80)}]", v) for k, v in pairs], dict.__len__(obj))
            if issubclass(cls, (list, tuple)):
                iterator = list.__iter__(obj) if issubclass(cls, list) else tuple.__iter__(obj)
                size = list.__len__(obj) if issubclass(cls, list) else tuple.__len__(obj)
                items = [(f"[{i}]", v) for i, v in enumerate(itertools.islice(iterator, limit))]
                if issubclass(cls, tuple) and hasattr(cls, "_fields"):
                    fields = cls.__dict__.get("_fields") or _class_lookup(cls, "_fields") or ()
                    items = [(f".{f}", v) for f, (_, v) in zip(fields, items)] or items
                return items, size
            if issubclass(cls, (set, frozenset)):
                iterator = set.__iter__(obj) if issubclass(cls, set) else frozenset.__iter__(obj)
                size = len(obj) if cls in (set, frozenset) else (
                    set.__len__(obj) if issubclass(cls, set) else frozenset.__len__(obj))
                return ([(f"{{{i}}}", v) for i, v in enumerate(itertools.islice(iterator, limit))],
                        size)
            if issubclass(cls, (types.ModuleType, type, types.FunctionType,
                                types.BuiltinFunctionType, types.MethodType)):
                return None
            attrs = static_attributes(obj)
            if attrs is None:
                return None
            if dataclasses.is_dataclass(cls):
                order = {f.name: i for i, f in enumerate(dataclasses.fields(cls))}
                attrs.sort(key=lambda kv: order.get(kv[0], len(order)))
            total = len(attrs)
            return [(f".{k}", v) for k, v in attrs[:limit]], total
        except RuntimeError:
            # Changed size during iteration (another thread mutating it): show no children.
            return None

    def _container_repr(self, obj: Any, cls: type, items: list, total: int | None,
                        kids: list | None = None, depth: int | None = 0) -> str:
        """A repr built from previews, so huge builtin containers never run a full ``repr``."""
        limit = self.options.max_repr
        builtin = cls in (dict, list, tuple, set, frozenset)
        if not builtin:
            return safe_repr(obj, limit)
        if kids is None:
            return clip(f"<{cls.__name__} of {total} items>", limit)
        parts = []
        for (label, _), (_, child) in zip(items, kids):
            if cls is dict:
                parts.append(f"{label[1:-1]}: {child['repr']}")
            else:
                parts.append(child["repr"])
        if total is not None and total > len(kids):
            parts.append("…")
        inner = ", ".join(parts)
        if cls is dict:
            text = "{" + inner + "}"
        elif cls is list:
            text = "[" + inner + "]"
        elif cls is tuple:
            text = "(" + inner + ("," if total == 1 else "") + ")"
        else:
            text = ("{" + inner + "}") if total else f"{cls.__name__}()"
        return clip(text, limit)


def redacted_preview(obj: Any) -> dict[str, Any]:
    """Return the preview shown in place of a secret value: its type only."""
    return {"type": type_name(obj), "repr": REDACTED_REPR, "redacted": True}
