"""Reading an object's attributes statically: its instance ``__dict__`` and ``__slots__`` through
the standard descriptors only, so no property, ``__getattr__`` or ``__getattribute__`` override
runs. Shared by previews (``preview.py``) and value identity (``identity.py``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["name_text", "own_namespace", "static_attributes"]


def own_namespace(cls: type) -> Any:
    """The class's own namespace (the ``mappingproxy`` of its ``__dict__``), read through
    ``type``'s slot: no metaclass ``__getattribute__`` or ``__getattr__`` runs. Raises
    ``TypeError`` when ``cls`` is not a class."""
    return type.__dict__["__dict__"].__get__(cls)


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
        except Exception:  # noqa: BLE001 - a C type without an instance dict
            instance_dict = None
        if type(instance_dict) is dict:
            has_any = True
            found.extend((name_text(k), v) for k, v in dict.items(instance_dict))
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__")
        if slots is None:
            continue
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            slot = _mangled(klass, slot)  # ``__hidden`` in class S is stored as ``_S__hidden``
            descr = klass.__dict__.get(slot)
            if type(descr).__name__ != "member_descriptor":
                continue
            has_any = True
            try:
                found.append((slot, descr.__get__(obj, cls)))
            except AttributeError:
                continue  # slot never assigned
    return found if has_any else None


def _mangled(klass: type, slot: str) -> str:
    """The name Python stores a private slot under (``__x`` of class ``_S`` is ``_S__x``)."""
    if not (type(slot) is str and slot.startswith("__")) or slot.endswith("__"):
        return slot
    owner = klass.__name__.lstrip("_")
    return f"_{owner}{slot}" if owner else slot


def name_text(key: Any) -> str:
    """An instance ``__dict__`` key as text without running the program's code: a str as
    itself (a str subclass through ``str.__str__``, not its own), anything else (a key put
    there by ``obj.__dict__[1] = …``) by its type and, for a builtin scalar, its repr."""
    if type(key) is str:
        return key
    if isinstance(key, str):
        return str.__str__(key)
    if type(key) in (int, float, bool, bytes, type(None)):
        return repr(key)
    return f"<{type(key).__name__} key>"


def _class_lookup(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None
