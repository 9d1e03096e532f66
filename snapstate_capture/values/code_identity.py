"""Identity of code: digests of code objects, functions, classes and generators' code.

A function, method, class, property or code object is the same value in two processes when it
has the same qualified name and the same code (``docs/value-identity.md``) — not the same
address, closure contents or line numbers, so the same function in another checkout or at
another line gives the same digest. ``code_digest`` digests a code object, ``_class_digest``
a class by the code of what it defines, ``_callable_digest`` a function-like class member;
``live_code`` reads the code a generator or coroutine runs. Code and class digests are cached
per object (weakly): each is computed once, however many values hold it.

``_h`` — the length-prefixed BLAKE2b-128 every identity digest is made of — lives here, below
``identity.py`` (the value walker) and ``identity_at_capture.py``, which build on it too.
"""

from __future__ import annotations

import hashlib
import marshal
import types
import weakref
from typing import Any

from .static import own_namespace

__all__ = ["code_digest", "live_code"]


def _h(*parts: bytes) -> bytes:
    """BLAKE2b-128 of ``parts``, each length-prefixed (no two part lists hash alike)."""
    return _blake(b"".join([len(p).to_bytes(4, "little") + p for p in parts]),
                  digest_size=16).digest()


_blake = hashlib.blake2b


def _qualified(obj: Any) -> bytes:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"{module if isinstance(module, str) else '?'}:{qualname if isinstance(qualname, str) else '?'}".encode()


#: How the file names of the methods attrs writes for a class begin (``attr._make``: "<attrs
#: generated hash …>" in older versions, "<attrs generated methods …>" in newer ones).
_ATTRS_CODE = "<attrs generated "

_CODE_CACHE: "weakref.WeakKeyDictionary[types.CodeType, bytes]" = weakref.WeakKeyDictionary()


def code_digest(code: types.CodeType) -> bytes:
    """16-byte digest of a code object: its qualified name, bytecode, names and constants
    (nested code by digest, frozensets by members). Line numbers and file paths do not count,
    so the same function in another checkout or at another line has the same digest. The
    ``__hash__`` attrs generates holds a salt made with ``hash()`` of a string, another in
    every process: its int constants do not count (jsonschema's ``referencing`` classes)."""
    found = _CODE_CACHE.get(code)
    if found is None:
        consts = []
        salted = code.co_name == "__hash__" and code.co_filename.startswith(_ATTRS_CODE)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                consts.append(b"c" + code_digest(const))
            elif isinstance(const, frozenset):
                consts.append(b"f" + b"".join(sorted(_const_bytes(m) for m in const)))
            elif salted and type(const) is int:
                consts.append(b"salt")
            else:
                consts.append(_const_bytes(const))
        found = _h(b"code", getattr(code, "co_qualname", code.co_name).encode(), code.co_code,
                   "\x00".join(code.co_names).encode(), "\x00".join(code.co_varnames).encode(),
                   "\x00".join(code.co_freevars).encode(), str(code.co_argcount).encode(),
                   str(code.co_flags).encode(), *consts)
        _CODE_CACHE[code] = found
    return found


def _const_bytes(const: Any) -> bytes:
    try:
        return marshal.dumps(const, 0)
    except ValueError:
        return repr(const).encode()


_CLASS_CACHE: "weakref.WeakKeyDictionary[type, bytes]" = weakref.WeakKeyDictionary()


def _class_digest(cls: type) -> bytes:
    """A class by qualified name and the code of what it defines (methods, properties…)."""
    found = _CLASS_CACHE.get(cls)
    if found is None:
        members = []
        try:
            namespace = dict(own_namespace(cls))
        except Exception:  # noqa: BLE001 - a class whose namespace cannot be read: name only
            namespace = {}
        for name in sorted(k for k in namespace if isinstance(k, str)):
            digest = _callable_digest(namespace[name])
            if digest is not None:
                members.append(name.encode() + b"=" + digest)
        found = _h(b"class", _qualified(cls), *members)
        _CLASS_CACHE[cls] = found
    return found


def _callable_digest(obj: Any) -> bytes | None:
    """Digest of a function-like member of a class namespace, or None for plain data."""
    cls = type(obj)
    if cls is types.FunctionType:
        return _h(b"fn", _qualified(obj), code_digest(obj.__code__))
    if cls is staticmethod or cls is classmethod:
        inner = _callable_digest(obj.__func__)
        return _h(cls.__name__.encode(), inner or b"?")
    if cls is property:
        return _h(b"property", *[_callable_digest(f) or b"-" for f in (obj.fget, obj.fset,
                                                                      obj.fdel)])
    if cls is type or isinstance(obj, type):
        return _h(b"classref", _qualified(obj))
    return None


def live_code(obj: Any) -> Any:
    """The code object of a generator, coroutine or async generator (what its identity digest
    holds beside its type), else None: two generators of one function's two generator
    expressions share their type, qualified name and repr, not their code. Read from the
    interpreter's own attributes (no program code runs)."""
    cls = type(obj)
    if cls is types.GeneratorType:
        return obj.gi_code
    if cls is types.CoroutineType:
        return obj.cr_code
    if cls is types.AsyncGeneratorType:
        return obj.ag_code
    return None
