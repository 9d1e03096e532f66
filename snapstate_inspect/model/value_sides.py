"""The two kinds of value the diff walks: previews (JSON from the file) and loaded objects.

Each side answers the same questions for the walk in ``value_diff``: what kind of node is this
(``map``, ``object``, ``seq``, ``set``, ``text``, ``ndarray``, ``leaf``), its entries or
elements, a cheap equality, a bounded size, a one-line summary, and the plain form handed to
DeepDiff with the way back from a DeepDiff path to our label syntax (``[3]['status']``).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import reprlib
import sys
from typing import Any

from snapstate_capture.values import safe_repr
from snapstate_capture.values.addresses import blank_addresses

META = "~"  # prefix of metadata keys in plain previews; labels start with "[", "." or "{"
PARTIAL_PREVIEW = "the preview holds part of the value; --full compares whole values"


_SCALARS = (int, float, complex, bool, str, bytes, type(None))


def normalize_repr(text: str) -> str:
    """A repr with memory addresses blanked (``<Foo object at 0x…>``, ``<Template memory:…>``:
    ``addresses.blank_addresses``), for comparing runs."""
    return blank_addresses(text)


def short_type(type_name: str | None) -> str:
    return (type_name or "?").removeprefix("builtins.")


class Leaf(str):
    """A preview leaf for DeepDiff: its (address-normalised) repr, equal only to a leaf of the
    same type, so ``1`` → ``'1'`` is a type change although both are short strings."""

    type_name: str

    def __new__(cls, text: str, type_name: str) -> Leaf:
        leaf = super().__new__(cls, text)
        leaf.type_name = type_name
        return leaf

    def __eq__(self, other: object) -> bool:
        return (str.__eq__(self, other) is True
                and getattr(other, "type_name", None) == self.type_name)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((str(self), self.type_name))

    def __repr__(self) -> str:
        return str(self)


class PreviewSide:
    """Preview trees (``{"type", "repr", "len", "children": [[label, node], …], "more"}``)."""

    def __init__(self, max_repr: int) -> None:
        self.max_repr = max_repr
        self._origin: dict[int, tuple[Any, dict]] = {}

    def equal(self, a: Any, b: Any) -> bool:
        if a == b:
            return True
        if not isinstance(a, dict) or not isinstance(b, dict):
            return False
        if "children" in a or "children" in b:
            return False
        return (a.get("type") == b.get("type") and a.get("len") == b.get("len")
                and normalize_repr(str(a.get("repr", ""))) == normalize_repr(str(b.get("repr", ""))))

    def kind(self, node: dict) -> str:
        children = node.get("children")
        if not isinstance(children, list):
            return "leaf"
        labels = [str(c[0]) for c in children if isinstance(c, list) and len(c) == 2]
        if any(label.startswith("{") for label in labels):
            return "set"
        if "dict" not in str(node.get("type", "")).lower() and all(
                label == f"[{i}]" for i, label in enumerate(labels)):
            return "seq"
        return "map"

    def scalar(self, node: dict) -> bool:
        """A leaf: no children (a number, a string, an object shown by its repr only)."""
        return not isinstance(node.get("children"), list)

    def _children(self, node: dict) -> list[tuple[str, dict]]:
        return [(str(c[0]), c[1]) for c in node.get("children") or ()
                if isinstance(c, list) and len(c) == 2 and isinstance(c[1], dict)]

    def entries(self, node: dict) -> tuple[list[str], list[dict]]:
        children = self._children(node)
        return [label for label, _ in children], [child for _, child in children]

    def label(self, kind: str, key: Any) -> str:
        return str(key)

    def elements(self, node: dict) -> list[dict]:
        return [child for _, child in self._children(node)]

    def fingerprint(self, node: dict) -> str:
        return normalize_repr(json.dumps(node, sort_keys=True, default=str))

    def size(self, node: Any, limit: int) -> int:
        """Number of nodes in the tree, counted up to ``limit``."""
        count, stack = 0, [node]
        while stack and count <= limit:
            current = stack.pop()
            count += 1
            stack.extend(child for _, child in self._children(current))
        return count

    def summary(self, node: Any) -> tuple[str, str]:
        return str(node.get("type", "?")), str(node.get("repr", ""))

    def meta(self, a: dict, b: dict) -> tuple[list[tuple[str, str, str]], bool]:
        """((kind, old, new) changes of the node itself, partial-preview flag)."""
        found = []
        ta, tb = str(a.get("type", "?")), str(b.get("type", "?"))
        if ta != tb:
            found.append(("type", ta, tb))
        if a.get("len") != b.get("len") and (a.get("more") or b.get("more")):
            found.append(("len", str(a.get("len")), str(b.get("len"))))
        partial = any(n.get(k) for n in (a, b) for k in ("more", "truncated"))
        return found, partial

    def plain(self, node: Any) -> Any:
        """The preview as plain data for DeepDiff: leaves become ``Leaf`` reprs, containers a
        dict of metadata plus children (a list under ``~items`` for sequences, a dict keyed by
        label otherwise; set members keyed by their repr, so order does not matter)."""
        kind = self.kind(node)
        if kind == "leaf":
            text = Leaf(normalize_repr(str(node.get("repr", ""))), str(node.get("type", "?")))
            if node.get("type") not in ("builtins.str", "builtins.bytes") and "len" in node:
                return {"~type": node.get("type"), "~len": node.get("len"), "~repr": text}
            return text
        out: dict[str, Any] = {"~type": node.get("type")}
        self._origin[id(out)] = (out, node)  # the fragment is kept alive with its id
        if node.get("more") or node.get("truncated"):
            out["~len"] = node.get("len")
        children = self._children(node)
        if kind == "seq":
            out["~items"] = [self.plain(child) for _, child in children]
        elif kind == "set":
            for _, child in children:
                out["{" + normalize_repr(str(child.get("repr", ""))) + "}"] = self.plain(child)
        else:
            for label, child in children:
                out[label] = self.plain(child)
        return out

    def level_path(self, level: Any) -> tuple[str, str | None]:
        """(label path, metadata key or None) of a DeepDiff tree-view level on plain previews."""
        path, meta = [], None
        for element in level.path(output_format="list"):
            if isinstance(element, int):
                path.append(f"[{element}]")
            elif isinstance(element, str) and element.startswith(META):
                if element != "~items":
                    meta = element[1:]
            else:
                path.append(str(element))
        return "".join(path), meta

    def value_text(self, value: Any) -> tuple[str | None, str]:
        """(type or None, repr) of a plain-preview fragment found in a DeepDiff level."""
        if isinstance(value, dict):
            kind = value.get("~type")
            if "~repr" in value:
                return kind, str(value["~repr"])
            origin = self._origin.get(id(value))
            if origin is not None and origin[0] is value:
                return kind, str(origin[1].get("repr", ""))
            return kind, safe_repr(value, self.max_repr)
        return getattr(value, "type_name", None), str(value)


class ObjectSide:
    """Loaded payloads (the "full values" mode). Reads instance attributes through ``vars``;
    every call into the objects' own code (``==``, ``repr``, iteration) is guarded by the walk."""

    def __init__(self, max_repr: int) -> None:
        self.max_repr = max_repr

    def equal(self, a: Any, b: Any) -> bool:
        return objects_equal(a, b, deep=False)

    def kind(self, obj: Any) -> str:
        try:
            return self._kind(obj)
        except Exception:  # noqa: BLE001 - e.g. a __dict__ property that raises
            return "leaf"

    def _kind(self, obj: Any) -> str:
        if isinstance(obj, dict):
            return "map"
        if isinstance(obj, (list, tuple)) and not hasattr(type(obj), "_fields"):
            return "seq"
        if isinstance(obj, (str, bytes)):
            return "text"
        if is_ndarray(obj):
            return "ndarray"
        if isinstance(obj, (set, frozenset)):
            return "set"
        attrs = getattr(obj, "__dict__", None)
        if type(attrs) is dict and not isinstance(obj, type):
            return "object"
        return "leaf"

    def scalar(self, obj: Any) -> bool:
        return type(obj) in _SCALARS

    def entries(self, obj: Any) -> tuple[list[Any], list[Any]]:
        source = obj if isinstance(obj, dict) else vars(obj)
        return list(dict.keys(source)), list(dict.values(source))

    def label(self, kind: str, key: Any) -> str:
        return f".{key}" if kind == "object" else f"[{safe_repr(key, 80)}]"

    def elements(self, obj: Any) -> list[Any]:
        return list(obj)

    def fingerprint(self, obj: Any) -> Any:
        try:
            hash(obj)
            return ("h", type(obj).__qualname__, obj)
        except Exception:  # noqa: BLE001 - unhashable: align on the bounded repr instead
            return ("r", normalize_repr(safe_repr(obj, 2000)))

    def size(self, obj: Any, limit: int) -> int:
        """Number of items in the tree, counted up to about ``limit``."""
        count, stack = 0, [obj]
        while stack and count <= limit:
            current = stack.pop()
            count += 1
            if isinstance(current, dict):
                count += len(current)
                stack.extend(itertools.islice(dict.values(current), limit))
            elif isinstance(current, (list, tuple, set, frozenset)):
                count += len(current)
                stack.extend(itertools.islice(current, limit))
            elif is_ndarray(current):
                count += int(getattr(current, "size", 0))
            elif isinstance(current, (str, bytes)):
                count += len(current) // 1000
            elif type(getattr(current, "__dict__", None)) is dict:
                stack.extend(vars(current).values())
        return count

    def summary(self, obj: Any) -> tuple[str, str]:
        return type_name(obj), bounded_repr(obj, self.max_repr)

    def meta(self, a: Any, b: Any) -> tuple[list[tuple[str, str, str]], bool]:
        ta, tb = type_name(a), type_name(b)
        return ([("type", ta, tb)] if ta != tb else []), False

    def plain(self, obj: Any) -> Any:
        return obj

    def level_path(self, level: Any) -> tuple[str, str | None]:
        if level.report_type in ("set_item_added", "set_item_removed") and level.up is not None:
            item = level.t2 if level.report_type == "set_item_added" else level.t1
            return level.up.path(root="") + "{" + safe_repr(item, 80) + "}", None
        return level.path(root=""), None

    def value_text(self, value: Any) -> tuple[str | None, str]:
        numpy = sys.modules.get("numpy")
        if numpy is not None and isinstance(value, numpy.generic):
            value = value.item()
        return None, bounded_repr(value, self.max_repr)


def type_name(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxtuple = 3, 12, 12, 12
_REPR.maxset, _REPR.maxfrozenset, _REPR.maxdeque, _REPR.maxarray = 12, 12, 12, 12


def bounded_repr(obj: Any, limit: int) -> str:
    """A repr of at most ``limit`` characters that never builds the full repr of a big builtin
    container (``reprlib``: a few items per level, ``...`` for the rest); never raises."""
    try:
        _REPR.maxstring = _REPR.maxother = _REPR.maxlong = max(limit, 8)
        text = _REPR.repr(obj)
    except Exception:  # noqa: BLE001 - a loaded object's __repr__ may raise anything
        return safe_repr(obj, limit)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def objects_equal(a: Any, b: Any, *, deep: bool = True) -> bool:
    """Guarded equality of two loaded values: NaN equals NaN, numpy arrays compare whole
    (``array_equal``, NaNs equal), and an ``__eq__`` that raises or returns a non-bool counts
    as "not known equal" instead of propagating. With ``deep`` (default), lists, tuples and
    dicts that ``==`` calls unequal or cannot compare are re-checked item by item under these
    rules; without it the answer is the one cheap comparison (the walk descends itself)."""
    if a is b:
        return True
    try:
        if type(a) is float and type(b) is float:
            return a == b or (math.isnan(a) and math.isnan(b))
        if is_ndarray(a) or is_ndarray(b):
            return _arrays_equal(a, b)
        try:
            result = a == b
        except Exception:  # noqa: BLE001 - e.g. a dict holding numpy arrays
            result = None
        if result is True:
            return True
        if not deep or type(a) is not type(b):
            return False
        if isinstance(a, (list, tuple)) and len(a) == len(b):
            return all(objects_equal(x, y) for x, y in zip(a, b))
        if isinstance(a, dict) and a.keys() == b.keys():
            return all(objects_equal(v, b[k]) for k, v in a.items())
        return False
    except Exception:  # noqa: BLE001 - a loaded object's __eq__ may raise anything
        return False


def is_ndarray(obj: Any) -> bool:
    """True for a numpy array (numpy is never imported here; only looked up if loaded)."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(obj, numpy.ndarray)


def _arrays_equal(a: Any, b: Any) -> bool:
    numpy = sys.modules["numpy"]
    if not (is_ndarray(a) and is_ndarray(b)):
        return False
    try:
        return bool(numpy.array_equal(a, b, equal_nan=True))
    except TypeError:  # equal_nan needs a numeric dtype
        return bool(numpy.array_equal(a, b))
