"""Whether a fast-path pickle wrote a secret: a name that redacts what it holds, or a string
shaped like a credential (``payload.py``'s fast path takes the part-by-part walk then, which
redacts precisely).

``has_secret_name`` scans the pickle's short strings (or, for a big binary pickle, the
pickler's memo) for a secret name, and settles a hit by the names the pickle really holds
(``_written_names_secret``): a class named ``Token``, or a value mentioning a token, is no
name. ``any_secret`` judges a known list of names (flat plain data: its dicts' keys);
``has_credential`` looks for credential shapes (``secret_shapes``). Names are judged once each
(``preview.secret_cache``).
"""

from __future__ import annotations

import pickle
import types
from typing import Any

from ..options import ValueOptions
from . import secret_shapes
from .identity import _plain_pickling as plain_pickling
from .preview import secret_cache
from .reducers import importable
from .static import own_namespace

__all__ = ["any_secret", "has_credential", "has_secret_name"]

#: Below this payload size, names are found by scanning the bytes for short strings (fast for
#: text-heavy data such as chat messages); above it, through the pickler's memo (a big binary
#: payload, such as an array, holds many stray 0x8c bytes but few memoized objects).
SCAN_BYTES_MAX = 256 * 1024
_SHORT_STR = b"\x8c"  # SHORT_BINUNICODE: every string under 256 bytes in protocol 4+
_NAME_MAX = 255  # every short string: names longer than 64 characters exist


def has_secret_name(pickler: pickle.Pickler, data: bytes, options: ValueOptions,
                     names: list[Any] | None = None) -> bool:
    """True when a name in the pickle (a dict key or attribute name: a short string), or a
    field of a namedtuple class it wrote, is a secret name; then the part-by-part path redacts.
    ``names``: every name, when the value is flat plain data (``payload._flat_names``). Otherwise
    false positives (a short *value* such as ``"password"``) only cost the slower path."""
    if names is not None:
        return any_secret(names, options)
    if len(data) > SCAN_BYTES_MAX:
        return _memo_has_secret_name(pickler, options)
    cache = secret_cache(options)
    is_secret = options.is_secret
    find, size = data.find, len(data)
    pos = find(_SHORT_STR)
    while pos >= 0:
        length = data[pos + 1] if pos + 1 < size else 0
        if 0 < length <= _NAME_MAX:
            raw = data[pos + 2:pos + 2 + length]
            found = cache.get(raw)
            if found is None:
                if len(cache) > 20_000:
                    cache.clear()
                found = cache[raw] = is_secret(raw.decode("utf-8", "replace"))
            if found:
                return _written_names_secret(pickler, options) is not False
        pos = find(_SHORT_STR, pos + 1)
    return _classes_have_secret_fields(pickler, options)


#: Types the C pickler memoizes that hold no names of their own: in a pickle whose memo holds
#: only these, every name is a key of one of its exact dicts.
_PLAIN_MEMO = frozenset({str, bytes, bytearray, dict, list, tuple, set, frozenset})


def has_credential(pickler: pickle.Pickler, data: bytes) -> bool:
    """True when a string in the pickle looks like a credential (``secret_shapes``): the bytes
    are scanned when small, the pickler's memoized strings when not."""
    if len(data) <= SCAN_BYTES_MAX:
        return secret_shapes.in_bytes(data)
    try:
        written = [entry[1] for entry in pickler.memo.copy().values()]
    except RuntimeError:  # pragma: no cover - the memo is the pickler's own
        return True
    return any(type(o) is str and secret_shapes.find(o) for o in written)


def any_secret(names: list[Any], options: ValueOptions) -> bool:
    """True when one of ``names`` (str or other keys) is a secret name (cached per name)."""
    cache = secret_cache(options)
    found = list(map(cache.get, names))
    if True in found:
        return True
    if None not in found:  # every name known already (the same keys at every step)
        return False
    for name, known in zip(names, found):
        if known is None and type(name) is str:
            if len(cache) > 20_000:
                cache.clear()
            if cache.setdefault(name, options.is_secret(name)):
                return True
    return False


def _written_names_secret(pickler: pickle.Pickler, options: ValueOptions) -> bool | None:
    """Settle a secret-looking short string found by the byte scan by the names the pickle
    really holds: the str keys of the dicts it wrote — plain dicts, an object's state
    (``__dict__``, its slots' dict) and a dict subclass's items — and the fields of the
    namedtuple classes it wrote. Those are the names the part-by-part path redacts under
    (``PartWalker``). Returns whether one of them is a secret name, or None when the pickle
    wrote an object whose names are not all there (a class with pickling hooks of its own, a
    function written by value): then any short string may be a name.

    The scan cannot tell a name from a class's name or a value: a class ``Token`` (every
    lexer's) or a note mentioning a token sent each capture down the part-by-part path,
    10x the fast path's cost (sqlparse: 2.7 ms against 0.2 ms a token tree). The memo holds
    every dict and object written (the pickler keeps them alive while it runs); they are read
    after they were written, as the part-by-part walk reads them before: another thread
    mutating them meanwhile is the same race either way, and a dict changing size while read
    here answers None (the careful path)."""
    try:
        written = [entry[1] for entry in pickler.memo.copy().values()]
        names: list[Any] = []  # dict keys, with their values in ``values``
        values: list[Any] = []
        fields: list[str] = []  # namedtuple fields: names without a value at hand
        for obj in written:
            cls = type(obj)
            if cls is dict:
                names.extend(dict.keys(obj))
                values.extend(dict.values(obj))
            elif cls in _PLAIN_MEMO or cls is types.ModuleType:
                continue
            elif issubclass(cls, type):  # a class, by reference: its name is not a name
                found = own_namespace(obj).get("_fields")
                if isinstance(found, tuple):
                    fields.extend(found)
            elif cls is types.FunctionType or cls is types.BuiltinFunctionType:
                if cls is types.FunctionType and not importable(obj):
                    return None  # written by value: its globals and closure
            elif plain_pickling(cls):  # its state is its __dict__ (and slots) dicts
                if issubclass(cls, dict):
                    names.extend(dict.keys(obj))
                    values.extend(dict.values(obj))
            else:
                return None
    except RuntimeError:  # a dict changed size while read (another thread)
        return None
    if len(names) != len(values):
        return None
    if any_secret(fields, options):
        return True
    if not any_secret(names, options):
        return False
    # a secret *word* (``token``) redacts a string or a number, not a container (sqlparse's
    # tree of token types has an attribute ``Token``): as the part-by-part path judges it
    cache = secret_cache(options)
    for name, value in zip(names, values):
        if type(name) is str:
            secret = cache.get(name)
            if secret is None:
                secret = cache.setdefault(name, options.is_secret(name))
            if secret and options.redacts(name, value):
                return True
    return False


def _classes_have_secret_fields(pickler: pickle.Pickler, options: ValueOptions) -> bool:
    """Namedtuples write their fields by position, not by name: check the classes written."""
    seen = getattr(pickler, "field_classes", None)
    return bool(seen) and any(options.is_secret(f) for cls in seen for f in cls._fields)


def _memo_has_secret_name(pickler: pickle.Pickler, options: ValueOptions) -> bool:
    """True when a short string written by ``pickler`` (a possible key or attribute name), or
    a field of a namedtuple class it wrote, is a secret name."""
    is_secret = options.is_secret
    cache = secret_cache(options)
    for _, written in pickler.memo.copy().values():
        cls = type(written)
        if cls is str:
            if len(written) <= _NAME_MAX:
                found = cache.get(written)
                if found is None:
                    if len(cache) > 20_000:
                        cache.clear()
                    found = cache[written] = is_secret(written)
                if found:
                    return _written_names_secret(pickler, options) is not False
        elif isinstance(written, type):
            fields = written.__dict__.get("_fields")
            if isinstance(fields, tuple) and any(is_secret(f) for f in fields):
                return True
    return False
