"""Previews: safe, bounded, JSON-only descriptions of captured objects.

A preview is what the inspector shows and diffs without running any code from the file. Shape
(every key but ``type`` and ``repr`` optional)::

    {"type": "module.qualname",         # the object's class, by name
     "repr": "bounded repr",            # at most ValueOptions.max_repr characters
     "len": 200,                        # len() of sized builtins (bytes of a memoryview)
     "children": [[label, preview], …], # label is the path suffix: "[3]", "['k']", ".attr", "{0}"
     "more": 150,                       # children left out by max_items
     "truncated": true,                 # children left out by max_depth
     "redacted": true,                  # value hidden because its name matches a secret pattern
     "shape": [3, 4], "dtype": "float64", "summary": {...}, "head": [...],  # arrays, frames
     "exception": {...},                # exceptions: see exceptions.describe_exception
     "placeholder": {"reason", "path", "type", "repr"},  # the whole value has no payload
     "placeholders": [{"path", "type", "repr", "reason"}, …],  # parts replaced in the payload
     "redacted_parts": ["cfg['api_key']", …],  # parts redacted in the payload
     "not_loadable": "not loadable: Error: …"}  # the payload failed its test-load

Building a preview never runs the object's own code except a guarded, timed ``__repr__`` of
non-builtin objects (``reprs.safe_repr``): attributes are read from the instance dict and slot
descriptors only, containers are iterated through the builtin type's own methods (so overrides
in subclasses are not called), and no property, ``__getattr__`` or ``cached_property`` is
evaluated (DESIGN.md "Capture rules"). Types with their own preview (numpy, pandas, pydantic,
exceptions, memoryview, …) are handled through ``PREVIEWS`` (see ``known_types.py``).
"""

from __future__ import annotations

import dataclasses
import itertools
import types
from typing import Any, Callable

from ..options import ValueOptions
from . import secret_shapes
from .addresses import could_be_address
from .preview_again import _AGAIN, dict_again
from .registry import MACHINERY, TypeRegistry, class_name
from .reprs import clip, safe_repr, type_name
from .static import _class_lookup, static_attributes

__all__ = ["PREVIEWS", "PreviewBuilder", "REDACTED_REPR", "clip", "redacted_preview",
           "safe_repr", "static_attributes", "type_name"]

_SCALARS = frozenset({int, float, complex, bool, type(None), type(Ellipsis),
                      type(NotImplemented)})
_TEXT = (str, bytes, bytearray)
#: Children whose node depends only on their label and identity (``PreviewBuilder.reuse``).
_IMMUTABLE = frozenset({str, bytes, int, float, complex, bool, type(None)})
_LEAF_TYPES = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
               types.MethodType, types.CodeType, types.FrameType, types.TracebackType,
               types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_BUILTIN_NAMES = {cls: f"builtins.{cls.__qualname__}" for cls in (
    int, float, complex, bool, type(None), str, bytes, bytearray, dict, list, tuple, set,
    frozenset)}
REDACTED_REPR = "<redacted>"

#: A preview handler: ``handler(builder, obj, node, depth, path_ids)`` fills and returns
#: ``node`` (which already holds ``type``), or returns None to use the generic preview.
PreviewHandler = Callable[["PreviewBuilder", Any, dict, int, set], "dict | None"]
PREVIEWS: TypeRegistry[PreviewHandler] = TypeRegistry("previews")


#: Sets up to this size are shown in canonical order (bigger ones in iteration order).
SORTED_MEMBERS_MAX = 10_000
_ORDERABLE = frozenset({int, float, bool, str, bytes})


def member_order(members: Any, size: int) -> list[Any]:
    """The members of a set in canonical order, so its preview (and the cut at ``max_items``)
    is the same whatever the hash seed or insertion history (docs/value-identity.md): scalars
    by type name and value, then other members by identity digest. Sets larger than
    ``SORTED_MEMBERS_MAX`` keep iteration order."""
    if size > SORTED_MEMBERS_MAX:
        return list(itertools.islice(members, SORTED_MEMBERS_MAX))
    items = list(members)
    kinds = set(map(type, items))
    if len(kinds) == 1 and kinds <= _ORDERABLE and float not in kinds:
        return sorted(items)
    from .identity import identity

    def key(value: Any) -> tuple:
        cls = type(value)
        if cls in _ORDERABLE and not (cls is float and value != value):
            return (0, cls.__name__, value, "")
        return (1, class_name(cls), 0, identity(value, budget=1_000) or "")

    try:
        return sorted(items, key=key)
    except TypeError:  # e.g. int and float of one name compared with str: by digest only
        return sorted(items, key=lambda v: (class_name(type(v)), identity(v, budget=1_000)
                                            or ""))


class PreviewBuilder:
    """Builds previews under one ``ValueOptions``; stateless apart from its options.

    ``build(obj)`` returns the preview dict. Cycles are cut (a container met again on the current
    path shows as ``<cycle>``), depth and width are bounded, and every user ``__repr__`` is guarded.
    Handlers in ``PREVIEWS`` use ``node``, ``child`` and ``repr_of`` to build their parts.
    """

    def __init__(self, options: ValueOptions, *, reuse: dict[int, list] | None = None) -> None:
        self.options = options
        self._slow = options.slow_repr_seconds
        self._secrets = secret_cache(options)
        #: Values found under secret names (``scrub.py`` scrubs their text from reprs).
        self.secret_values: list[Any] = []
        #: The top value's earlier children (``KidMemo``): an exact dict or list reuses the
        #: node of each immutable child still at the same position, label and object.
        self.reuse = reuse
        #: An int that could be an object's address was met (``addresses.could_be_address``):
        #: the value then gets an identity digest even where it would not (``capture_value``).
        self.addresses = False

    def is_secret(self, name: Any) -> bool:
        """``options.is_secret(name)`` through a per-options cache (names repeat at every step)."""
        found = self._secrets.get(name)
        if found is None:
            if len(self._secrets) > 20_000:
                self._secrets.clear()
            found = self._secrets[name] = type(name) is str and self.options.is_secret(name)
        return found

    def build(self, obj: Any, name: str | None = None) -> dict[str, Any]:
        """Return the preview of ``obj``; redacted when ``name`` matches a secret pattern."""
        if name is not None and self.options.redacts(name, obj):
            return redacted_preview(obj)
        return self.node(obj, 0, set())

    def repr_of(self, obj: Any, limit: int | None = None) -> str:
        """Guarded, timed, bounded repr of ``obj`` (``reprs.safe_repr``)."""
        return safe_repr(obj, limit or self.options.max_repr, self._slow)

    def node(self, obj: Any, depth: int, path_ids: set[int]) -> dict[str, Any]:
        """Return the preview node of ``obj`` found ``depth`` levels below the value."""
        opts = self.options
        cls = type(obj)
        if cls is str:
            limit = min(opts.max_string, opts.max_repr) if depth else opts.max_string
            if opts.secret_shapes and opts.redact_secrets:
                self.secret_values.extend(secret_shapes.find(obj))  # scrubbed from every text
            return {"type": "builtins.str", "repr": safe_repr(obj, limit), "len": len(obj)}
        if cls is dict or cls is list:  # the hot path of agent states
            if id(obj) in path_ids:
                return {"type": _BUILTIN_NAMES[cls], "repr": "<cycle>"}
            return self._builtin_container(obj, cls, {"type": _BUILTIN_NAMES[cls]}, depth,
                                           path_ids)
        if cls in _SCALARS:
            if cls is int and could_be_address(obj):
                self.addresses = True
            return {"type": _BUILTIN_NAMES[cls] if cls in _BUILTIN_NAMES else type_name(obj),
                    "repr": safe_repr(obj, opts.max_repr)}
        name = _BUILTIN_NAMES.get(cls) or class_name(cls)
        node: dict[str, Any] = {"type": name}
        if issubclass(cls, _TEXT):
            if isinstance(obj, str) and opts.secret_shapes and opts.redact_secrets:
                self.secret_values.extend(secret_shapes.find(obj))
            node["repr"] = safe_repr(obj, min(opts.max_string, opts.max_repr)
                                     if depth else opts.max_string, self._slow)
            node["len"] = len(obj) if cls in _BUILTIN_NAMES else _builtin_len(obj)
            return node
        if id(obj) in path_ids:
            node["repr"] = "<cycle>"
            return node
        if cls not in _BUILTIN_NAMES:
            handler = MACHINERY.lookup(cls) or PREVIEWS.lookup(cls)
            if handler is not None:
                try:
                    done = handler(self, obj, node, depth, path_ids)
                except Exception as exc:  # noqa: BLE001 - a library's object in a bad state
                    node["repr"] = f"<preview failed: {type(exc).__name__}>"
                    node["preview_error"] = clip(f"{type(exc).__name__}: {exc}", 200)
                    return node
                if done is not None:
                    return done
        children = self._children(obj, cls)
        if children is None:
            node["repr"] = self.repr_of(obj)
            return node
        items, total = children
        if total is not None:
            node["len"] = total
        return self.fill_children(node, obj, items, total, depth, path_ids)

    def fill_children(self, node: dict[str, Any], obj: Any, items: list[tuple[str, Any]],
                      total: int | None, depth: int, path_ids: set[int],
                      repr_text: str | None = None) -> dict[str, Any]:
        """Add ``children`` (or ``truncated`` below ``max_depth``), ``more`` and ``repr``.

        ``items`` are ``(label, value)`` pairs; a label's key (``.name`` / ``['name']``) that is
        a secret name gives a redacted child. ``repr_text`` overrides the repr.
        """
        cls = type(obj)
        if depth >= self.options.max_depth:
            node["repr"] = repr_text or self._container_repr(obj, cls, items, total, None)
            if items or total:
                node["truncated"] = True
            return node
        path_ids.add(id(obj))
        try:
            kids = [[label, self.child(label, value, depth, path_ids)] for label, value in items]
        finally:
            path_ids.discard(id(obj))
        node["children"] = kids
        if total is not None and total > len(kids):
            node["more"] = total - len(kids)
        node["repr"] = repr_text or self._container_repr(obj, cls, items, total, kids)
        return node

    def child(self, label: str, value: Any, depth: int, path_ids: set[int]) -> dict[str, Any]:
        """Preview of a child under ``label``; redacted when the label names a secret."""
        key = _label_key(label)
        if self.is_secret(key) and self.options.redacts(key, value):
            self.secret_values.append(value)
            return redacted_preview(value)
        return self.node(value, depth + 1, path_ids)

    def _builtin_container(self, obj: Any, cls: type, node: dict[str, Any], depth: int,
                           path_ids: set[int]) -> dict[str, Any]:
        """Exact ``dict`` and ``list``: the hot path of agent states (W1), kept lean."""
        limit = self.options.max_items
        if depth == 0 and cls is dict and self.reuse is not None and \
                self.options.max_depth > 0:
            again = self._dict_again(obj, node, path_ids)
            if again is not None:
                return again
        try:
            total = len(obj)
            if cls is dict:
                items = [(f"[{k!r}]", k, v) if type(k) is str and len(k) <= 80
                         else (_key_label(k), k if type(k) is str else None, v)
                         for k, v in itertools.islice(obj.items(), limit)]
                if not self.addresses and any(key is None for _, key, _ in items):
                    self.addresses = any(type(k) is int and could_be_address(k)
                                         for k in itertools.islice(obj, limit))
            else:
                items = [(f"[{i}]", None, v) for i, v in enumerate(itertools.islice(obj, limit))]
        except RuntimeError:  # changed size during iteration (another thread mutating it)
            node["repr"] = f"<{cls.__name__} changing size>"
            return node
        node["len"] = total
        if depth >= self.options.max_depth:
            node["repr"] = f"<{cls.__name__} of {total} items>"
            if total:
                node["truncated"] = True
            return node
        path_ids.add(id(obj))
        kids = []
        text_limit = min(self.options.max_string, self.options.max_repr)
        secrets, node_of = self._secrets, self.node
        shapes = self.options.secret_shapes and self.options.redact_secrets
        reuse = self.reuse if depth == 0 else None
        try:
            for position, (label, key, value) in enumerate(items):
                if key is not None:
                    secret = secrets.get(key)
                    if secret is None:
                        secret = self.is_secret(key)
                    if secret and self.options.redacts(key, value):
                        self.secret_values.append(value)
                        kids.append([label, redacted_preview(value)])
                        continue
                if reuse is not None:
                    known = reuse.get(position)
                    if known is not None and known[1] is value and known[0] == label:
                        kids.append([label, known[2]])
                        continue
                if type(value) is str:  # the commonest leaf, inlined
                    size = len(value)
                    if shapes and size >= 16:
                        self.secret_values.extend(secret_shapes.find(value))
                    text = repr(value if size <= text_limit else value[:text_limit])
                    if len(text) > text_limit:
                        text = text[:text_limit - 1] + "…"
                    kids.append([label, {"type": "builtins.str", "len": size, "repr": text}])
                else:
                    kids.append([label, node_of(value, depth + 1, path_ids)])
                if reuse is not None and type(value) in _IMMUTABLE:
                    reuse[position] = [label, value, kids[-1][1], None]
        finally:
            path_ids.discard(id(obj))
        node["children"] = kids
        if total > len(kids):
            node["more"] = total - len(kids)
        node["repr"], span = self.container_repr_span(obj, cls, items, total, kids)
        if reuse is not None and cls is dict:
            reuse.pop(_AGAIN, None)
            if not self.secret_values:
                keys, values = list(obj), [item[2] for item in items]
                # Kept only when they are immutable scalars (which no weak reference can
                # see), so the memo never keeps a program's object alive.
                if (len(keys) == total and set(map(type, keys)) <= _IMMUTABLE
                        and set(map(type, values)) <= _IMMUTABLE):
                    reuse[_AGAIN] = (keys, values, items, kids, node["repr"], span)
        return node

    def _dict_again(self, obj: dict, node: dict[str, Any], path_ids: set[int]
                    ) -> dict[str, Any] | None:
        """The top-level preview of an exact dict built from its previous one (``reuse``),
        when its keys are the same objects in the same order and every shown value is an
        immutable scalar: only the children whose value is another object are built again,
        at C speed apart from them (W1's scratchpad: one of 100 keys set per step). None
        when that does not hold, or when the last or a new child met a secret (names or
        shapes): the caller then builds the whole preview."""
        return dict_again(self, obj, node, path_ids)

    def _children(self, obj: Any, cls: type) -> tuple[list[tuple[str, Any]], int | None] | None:
        """Return (labelled children, total count or None) for containers; None for leaves."""
        limit = self.options.max_items
        try:
            if issubclass(cls, dict):
                pairs = itertools.islice(dict.items(obj), limit)
                return ([(_key_label(k), v) for k, v in pairs], dict.__len__(obj))
            if issubclass(cls, list):
                items = [(f"[{i}]", v)
                         for i, v in enumerate(itertools.islice(list.__iter__(obj), limit))]
                return items, list.__len__(obj)
            if issubclass(cls, tuple):
                items = [(f"[{i}]", v)
                         for i, v in enumerate(itertools.islice(tuple.__iter__(obj), limit))]
                fields = _class_lookup(cls, "_fields") if cls is not tuple else None
                if isinstance(fields, tuple):
                    items = [(f".{f}", v) for f, (_, v) in zip(fields, items)] or items
                return items, tuple.__len__(obj)
            if issubclass(cls, (set, frozenset)):
                base = set if issubclass(cls, set) else frozenset
                members = member_order(base.__iter__(obj), base.__len__(obj))
                return ([(f"{{{i}}}", v) for i, v in enumerate(members[:limit])],
                        base.__len__(obj))
            if issubclass(cls, _LEAF_TYPES):
                return None
            attrs = static_attributes(obj)
            if attrs is None:
                return None
            if dataclasses.is_dataclass(cls):
                order = {f.name: i for i, f in enumerate(dataclasses.fields(cls))}
                attrs.sort(key=lambda kv: order.get(kv[0], len(order)))
            return [(f".{k}", v) for k, v in attrs[:limit]], len(attrs)
        except RuntimeError:
            # Changed size during iteration (another thread mutating it): show no children.
            return None

    def _container_repr(self, obj: Any, cls: type, items: list, total: int | None,
                        kids: list | None) -> str:
        """A repr built from previews, so huge builtin containers never run a full ``repr``."""
        return self.container_repr_span(obj, cls, items, total, kids)[0]

    def container_repr_span(self, obj: Any, cls: type, items: list, total: int | None,
                            kids: list | None) -> tuple[str, int]:
        """``_container_repr`` and how many of the first children it is made of: a child
        from that position on changes nothing in it (``preview_again.dict_again``)."""
        limit = self.options.max_repr
        if cls not in (dict, list, tuple, set, frozenset):
            return self.repr_of(obj), len(kids or ())
        if kids is None:
            return clip(f"<{cls.__name__} of {total} items>", limit), 0
        parts: list[str] = []
        size = 0
        for item, (_, child) in zip(items, kids):
            label = item[0]
            part = f"{label[1:-1]}: {child['repr']}" if cls is dict else child["repr"]
            parts.append(part)
            size += len(part) + 2
            if size > limit:
                break
        span = len(parts)
        if (total is not None and total > len(parts)) or len(parts) < len(kids):
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
        return clip(text, limit), span


_SECRET_CACHES: dict[tuple, dict[Any, bool]] = {}


def secret_cache(options: ValueOptions) -> dict[Any, bool]:
    """A process-wide ``name -> is secret`` cache for ``options``' patterns (names repeat at
    every step; the cache is cleared when it grows past 20,000 names)."""
    key = (options.secret_patterns, options.secret_exempt, options.secret_words,
           options.redact_secrets)
    cache = _SECRET_CACHES.get(key)
    if cache is None:
        cache = _SECRET_CACHES[key] = {}
    return cache


def _builtin_len(obj: Any) -> int:
    cls = type(obj)
    for base in (str, bytes, bytearray):
        if issubclass(cls, base):
            return base.__len__(obj)
    return 0


_KEY_REPRS = (str, int, float, bool, type(None), bytes)


def _key_label(key: Any) -> str:
    """``['name']`` for a dict key; non-builtin keys get a guarded repr."""
    cls = type(key)
    if cls is str:
        return f"[{key!r}]" if len(key) <= 80 else f"[{safe_repr(key, 80)}]"
    if cls in _KEY_REPRS:
        return f"[{safe_repr(key, 80)}]"
    return f"[{safe_repr(key, 80, 0.05)}]"


def _label_key(label: str) -> str:
    """The name inside a child label: ``.api_key`` → ``api_key``, ``['token']`` → ``token``."""
    if label.startswith("."):
        return label[1:]
    if label.startswith("['") or label.startswith('["'):
        return label[2:-2]
    return ""


def redacted_preview(obj: Any) -> dict[str, Any]:
    """Return the preview shown in place of a secret value: its type only."""
    return {"type": type_name(obj), "repr": REDACTED_REPR, "redacted": True}
