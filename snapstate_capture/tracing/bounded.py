"""The bounded form of a big value at a traced step: one level of preview, no payload.

A value ``big_values.py`` finds big (or whose marshal copy is over
``value_encoder.MARSHAL_BYTES``) is stored at a traced step as its preview one level deep — its
type, its repr, its attributes or first items with their scalars and sizes — marked
``"bounded"`` (``big_values.bounded_note``), and no payload and no identity digest. Replay
and ``snapstate diff`` compare such values by that preview (memory addresses blanked), so a
change deeper inside is seen where it reaches a local or a return value of its own.

Building the preview runs no code of the program but the guarded repr of an object with its
own ``__repr__``. ``shallow_key`` reads what a preview is made of, so the value encoder keeps
one reference per key and builds the preview only for a key it has not seen
(``ValueEncoder.bounded``; a key of pyflakes' Checker's 16 attributes: 3.4 µs,
bench/README.md).
"""

from __future__ import annotations

import itertools
from typing import Any

from ..options import ValueOptions
from ..values.addresses import (blank_addresses, could_be_address, part_address,
                                stack_addresses)
from ..values.preview import PreviewBuilder, redacted_preview
from ..values.identity import _plain_pickling, live_identity
from ..values.registry import class_name
from ..values.scrub import scrub, secret_texts
from ..values.static import own_namespace, static_attributes
from .big_values import BOUNDED_NOTE
from .by_value import local_class

__all__ = ["bounded_preview", "key_holds_local_class", "shallow_key"]

_CONTAINERS = (dict, list, tuple, set, frozenset)
_BASES = {cls: cls for cls in _CONTAINERS}  # the containers themselves (subclasses: isinstance)

#: Children previewed by the ordinary builder (a bounded text); any other child is summarised
#: by its type and size without running its repr or reading its items.
_CHEAP = frozenset({str, bytes, int, float, complex, bool, type(None)})


def shallow_key(obj: Any, limit: int, repr_of: Any = None) -> tuple | None:
    """What a bounded preview of ``obj`` is made of — its type, length, and each shown child's
    type and scalar value or size — so equal keys give equal previews (``ValueEncoder`` keeps
    one reference per key instead of building the preview again). A class with its own
    ``__repr__`` shows that repr: with ``repr_of`` (``PreviewBuilder.repr_of`` of the bounded
    options) it is called once, after the attributes were read as ``bounded_preview`` reads
    them, and its text, addresses blanked, is the key's second part — hand it to
    ``bounded_preview`` (``text``), which then does not call it again; without ``repr_of`` such
    a key is None. Never raises."""
    cls = type(obj)
    try:
        if isinstance(obj, dict):
            parts = tuple([(_key_part(k), _part(v))
                           for k, v in itertools.islice(dict.items(obj), limit)])
            return (cls, dict.__len__(obj), parts)
        if isinstance(obj, (list, tuple)):
            base = list if isinstance(obj, list) else tuple
            return (cls, base.__len__(obj),
                    tuple(map(_part, itertools.islice(base.__iter__(obj), limit))))
        if isinstance(obj, (set, frozenset)):
            return (cls, (set if isinstance(obj, set) else frozenset).__len__(obj), ())
        own = cls.__repr__ is not object.__repr__
        if own and repr_of is None:
            return None
        attrs = _class_attributes(obj) if issubclass(cls, type) else \
            (static_attributes(obj) or []) if _plain_pickling(cls) else []
        parts = tuple([(k, _part(v)) for k, v in attrs[:limit]])
        return (cls, blank_addresses(repr_of(obj)) if own else id(obj), parts)
    except Exception:  # noqa: BLE001 - unreadable: the preview is built each time
        return None


def key_holds_local_class(key: tuple) -> bool:
    """Whether a ``shallow_key`` names a class defined at run time (``local_class``): such a key
    is not kept in a cache, which would keep the class alive after the program let it go."""
    pending = [key]
    while pending:
        item = pending.pop()
        if type(item) is tuple:
            pending.extend(item)
        elif type(item) is not str and isinstance(item, type) and local_class(item):
            return True
    return False


def _part(value: Any) -> tuple:
    cls = type(value)
    if cls in _CHEAP:
        return (cls, value.hex() if cls is float else value)
    base = _BASES.get(cls)
    if base is not None:
        return (cls, base.__len__(value))
    if isinstance(value, _CONTAINERS):
        base = next(b for b in _CONTAINERS if isinstance(value, b))
        return (cls, base.__len__(value))
    return (cls,)


def _key_part(key: Any) -> tuple:
    """A dict key's part: its label is its repr, which for an object shows its address."""
    cls = type(key)
    return (cls, key.hex() if cls is float else key) if cls in _CHEAP else (cls, id(key))


def bounded_preview(obj: Any, options: ValueOptions, text: str | None = None,
                    note: str = BOUNDED_NOTE) -> dict[str, Any]:
    """The preview of a bounded value: type, a repr, ``len`` of containers, and one level of
    children (the attributes of an object that pickles plainly; one with its own pickling,
    such as a sympy expression whose slots hold lazily filled caches, shows its repr alone) —
    scalars and strings as usual (secret names and secret-shaped text redacted),
    other children by type and size only (``truncated``) — plus ``"bounded": note``.
    A set's members are not listed (their order is not canonical without walking them). Runs
    no code of the program but the guarded repr of a non-container object — none when
    ``text`` is that repr as ``shallow_key`` read it; never raises."""
    builder = PreviewBuilder(options)
    cls = type(obj)
    node: dict[str, Any] = {"type": class_name(cls), "bounded": note}
    try:
        items, total = _items(obj, options.max_items)
        if total is not None:
            node["len"] = total
            node["repr"] = f"<{cls.__name__} of {total} items>"
        elif cls.__repr__ is object.__repr__:  # no address: the same text in every process
            node["repr"] = f"<{node['type']} object>"
        else:  # its own repr, addresses blanked (" at 0x…", "memory:…"): the same text in every process
            node["repr"] = (text if text is not None
                            else blank_addresses(builder.repr_of(obj)))
        kids = []
        # (an int that is an address: named by what it is the id of, ``part_address``)
        attributes = [(label, value) for label, _, value in items]
        for label, key, value in items:
            if key is not None and builder.is_secret(key) and options.redacts(key, value):
                builder.secret_values.append(value)
                kids.append([label, redacted_preview(value)])
            elif type(value) in _CHEAP:
                where = part_address(value, obj, attributes) if type(value) is int else None
                kids.append([label, {"type": "builtins.int", "repr": f"id({where}) at {value:#x}"}
                             if where is not None else builder.node(value, 1, set())])
            else:
                kids.append([label, _summary(value)])
        if kids:
            node["children"] = kids
        shown = len(items) if total is None else total
        if shown > len(kids):
            node["more"] = shown - len(kids)
        if isinstance(obj, (set, frozenset)) and total:
            node["truncated"] = True
    except Exception as exc:  # noqa: BLE001 - an object in a bad state: its type is kept
        node["repr"] = f"<preview failed: {type(exc).__name__}>"
    live = live_identity(obj)
    if live is not None:  # a lock, a semaphore: compared by its type (docs/value-identity.md)
        node["identity"] = live
    texts = secret_texts(builder.secret_values)
    return scrub(node, texts) if texts else node


def _items(obj: Any, limit: int) -> tuple[list[tuple[str, Any, Any]], int | None]:
    """(label, secret-checked key or None, value) children and the container's length (None
    for a plain object, whose attributes are read statically)."""
    from ..values.preview import _key_label  # the labels every preview uses

    if isinstance(obj, dict):
        pairs = list(itertools.islice(dict.items(obj), limit))
        addresses = _address_keys(pairs)
        return ([(f"[id({addresses[k]}) at {k:#x}]" if k in addresses else _key_label(k),
                  k if type(k) is str else None, v) for k, v in pairs], dict.__len__(obj))
    if isinstance(obj, (list, tuple)):
        base = list if isinstance(obj, list) else tuple
        values = list(itertools.islice(base.__iter__(obj), limit))
        return [(f"[{i}]", None, v) for i, v in enumerate(values)], base.__len__(obj)
    if isinstance(obj, (set, frozenset)):
        base = set if isinstance(obj, set) else frozenset
        return [], base.__len__(obj)
    if issubclass(type(obj), type):  # a class defined at run time: its own attributes
        return [(f".{k}", k, v) for k, v in _class_attributes(obj)[:limit]], None
    if not _plain_pickling(type(obj)):
        return [], None  # its own pickling says what its state is (caches left out): repr only
    attrs = static_attributes(obj) or []
    return [(f".{k}", k, v) for k, v in attrs[:limit]], None


def _address_keys(pairs: list[tuple[Any, Any]]) -> dict[int, str]:
    """The int keys of ``pairs`` that are object addresses (``values/addresses.py``), with what
    each is the id of: the value under it (``value``) or one of its items (``value[1]``:
    networkx's ``{id(f): (name, f)}``), or a local on the stack (``function.name``). Labelled
    ``[id(value[1]) at 0x…]``, which replay and diffs read with the address blanked, as in any
    repr: another number in every process, the same name."""
    ints = [k for k, _ in pairs if type(k) is int and could_be_address(k)]
    if not ints:
        return {}
    found: dict[int, str] = {}
    for key, value in pairs:
        if type(key) is int and key in ints:
            if id(value) == key:
                found[key] = "value"
            elif type(value) in (tuple, list):
                for index, item in enumerate(value):
                    if id(item) == key:
                        found[key] = f"value[{index}]"
                        break
    rest = [k for k in ints if k not in found]
    if rest:
        found.update(stack_addresses(rest, memo=True))  # a dict's keys
    return found


def _class_attributes(cls: type) -> list[tuple[str, Any]]:
    """The attributes a class's own namespace holds, dunder names aside, read statically."""
    try:
        namespace = own_namespace(cls)
        return [(k, v) for k, v in namespace.items()
                if type(k) is str and not (k.startswith("__") and k.endswith("__"))]
    except Exception:  # noqa: BLE001 - an unreadable namespace: the repr alone
        return []


def _summary(value: Any) -> dict[str, Any]:
    cls = type(value)
    node: dict[str, Any] = {"type": class_name(cls)}
    if isinstance(value, _CONTAINERS):
        base = next(b for b in _CONTAINERS if isinstance(value, b))
        size = base.__len__(value)
        node["len"] = size
        node["repr"] = f"<{cls.__name__} of {size} items>"
        if size:
            node["truncated"] = True
    else:
        node["repr"] = f"<{cls.__name__}>"
        node["truncated"] = True
    return node
