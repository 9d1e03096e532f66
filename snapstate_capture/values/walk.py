"""The part-by-part payload path: one bad part becomes one placeholder, the rest is kept.

Used when the fast path (one C pickle of the whole value, ``payload.py``) failed, met a
secret-looking name, or gave a payload that does not load back. ``PartWalker.visit`` walks the
value the way pickle would — through each object's own reduction (``copyreg`` table, then
``__reduce_ex__(5)``), never through properties or ``__getattr__`` — and decides for every part:

- keep it as it is (most parts);
- replace it with a ``Placeholder`` naming its path (``session.reply``, ``tools[2].client``)
  when neither pickle nor dill can write it, or a reducer refuses it (``reducers.py``);
- replace it with a redacted ``Placeholder`` when it sits under a secret name (a dict key or
  an attribute such as ``api_key``), so the secret's bytes never reach the payload;
- for an object with a replaced part: record a *substitute reduction* (its own reduce tuple
  with the parts replaced) that the pickler's ``reducer_override`` hands back in place of the
  object's own. The user's object is never modified or copied; builtin containers (which the
  C pickler writes without asking ``reducer_override``) are copied with the parts replaced.

Objects whose class has a ``__getattr__`` but no ``__setstate__`` get ``rebuild.restore_state``
as their state setter, so loading them cannot recurse into ``__getattr__`` while they are empty.
"""

from __future__ import annotations

import copyreg
import types
import weakref
from typing import Any

from ..options import ValueOptions
from . import secret_shapes
from .static import name_text
from .placeholder import Placeholder
from .reducers import REDUCERS, Refusal, function_reduce, importable
from .reprs import clip, failed, safe_repr, type_name
from . import rebuild

PROTOCOL = 5
#: Deeper parts are left to the pickler as they are (the walk recurses in Python).
MAX_DEPTH = 150
REDACTED_REASON = "redacted: secret name"
REDACTED_SHAPE = "redacted: holds a credential"

_ATOMIC = frozenset({type(None), bool, int, float, complex, str, bytes, bytearray, range, slice,
                     type(Ellipsis), type(NotImplemented)})
_GLOBALS = (types.FunctionType, type)
#: What a class attribute under a secret's name must be to count as one (``_secrets_in``):
#: data, not a method, property or class named so.
_SECRET_DATA = frozenset({str, bytes, bytearray, int, dict, list, tuple})


def describe(exc: BaseException) -> str:
    """``ErrorType: message`` (message bounded) for a failure to serialize."""
    return failed(exc)[len("<repr failed: "):-1]


class PartWalker:
    """Walks one value and prepares its parts for pickling (module docstring).

    After ``root = walker.visit(value, path)``: ``overrides`` maps ``id(obj)`` to the
    substitute reduction of each object with replaced parts; ``placeholders`` lists the parts
    that could not be serialized, ``redacted`` the paths of redacted parts; ``needs_dill`` says
    a part can only be written by dill. ``keep`` holds every visited object until the walker is
    dropped, so the ids in ``overrides`` stay valid while the payload is written.
    """

    def __init__(self, options: ValueOptions, dill_check: Any) -> None:
        self.options = options
        self.dill_check = dill_check
        self.memo: dict[int, Any] = {}
        self.overrides: dict[int, tuple] = {}
        self.keep: list[Any] = []
        self.placeholders: list[Placeholder] = []
        self.redacted: list[str] = []
        self.secret_values: list[Any] = []
        self.needs_dill = False

    # -- entry -----------------------------------------------------------------------------
    def visit(self, obj: Any, path: str, depth: int = 0) -> Any:
        """Return ``obj`` or its replacement (a Placeholder or a container copy)."""
        cls = type(obj)
        if cls in _ATOMIC:
            if cls is str and self.options.secret_shapes and self.options.redact_secrets:
                found = secret_shapes.find(obj)
                if found:  # a credential by its shape (secret_shapes.py): only it is scrubbed
                    self.redacted.append(path)
                    self.secret_values.extend(found)
                    return Placeholder("builtins.str", "<redacted>", REDACTED_SHAPE, path)
            return obj
        key = id(obj)
        if key in self.memo:
            return self.memo[key]
        if depth > MAX_DEPTH:
            return obj
        self.keep.append(obj)
        reducer = REDUCERS.lookup(cls)
        if reducer is not None:
            try:
                outcome = reducer(obj)
            except Exception as exc:  # noqa: BLE001 - the object is in a state we cannot read
                return self._placeholder(obj, path, describe(exc))
            if isinstance(outcome, Refusal):
                return self._placeholder(obj, path, outcome.reason)
            if outcome is not None:
                return self._reduced(obj, outcome, path, depth, forced=True)
        if cls is dict:
            return self._dict(obj, path, depth)
        if cls is list:
            return self._list(obj, path, depth)
        if cls is tuple:
            return self._tuple(obj, path, depth)
        if cls is set or cls is frozenset:
            return self._set(obj, path, depth)
        if cls is types.MappingProxyType:
            redacted = self._redacted_proxy(obj, path, depth)
            if redacted is not None:
                return redacted
        if isinstance(obj, _GLOBALS):
            return self._global(obj, path, depth)
        return self._object(obj, path, depth)

    # -- outcomes --------------------------------------------------------------------------
    def _placeholder(self, obj: Any, path: str, reason: str) -> Placeholder:
        holder = Placeholder(type_name(obj), safe_repr(obj, self.options.max_repr,
                                                       self.options.slow_repr_seconds),
                             reason, path)
        self.placeholders.append(holder)
        self.memo[id(obj)] = holder
        return holder

    def _redact(self, obj: Any, path: str) -> Placeholder:
        self.redacted.append(path)
        self.secret_values.append(obj)
        return Placeholder(type_name(obj), "<redacted>", REDACTED_REASON, path)

    def _by_dill(self, obj: Any, path: str, reason: str) -> Any:
        """Keep ``obj`` when dill can write it (pickle refused with ``reason``)."""
        if self.dill_check(obj):
            self.needs_dill = True
            self.memo[id(obj)] = obj
            return obj
        return self._placeholder(obj, path, reason)

    # -- kinds -----------------------------------------------------------------------------
    def _global(self, obj: Any, path: str, depth: int = 0) -> Any:
        if importable(obj):
            self.memo[id(obj)] = obj
            return obj
        if type(obj) is types.FunctionType:  # a closure: the C pickler writes it, parts walked
            reduced = function_reduce(obj)
            if reduced is not NotImplemented:
                return self._reduced(obj, reduced, path, depth, forced=False)
        if isinstance(obj, type):
            secrets = self._secrets_in(vars(obj))
            if secrets:  # dill would copy the class with its attributes: not with a secret
                self.secret_values.extend(secrets)
                self.redacted.append(path)
                return Placeholder(type_name(obj), "<redacted>", REDACTED_REASON, path)
        return self._by_dill(obj, path, f"{type(obj).__name__} {getattr(obj, '__qualname__', '?')}"
                                        " is not importable and dill cannot copy it")

    def _secrets_in(self, mapping: Any) -> list[Any]:
        """The secrets, by their names or their shapes, among the items of ``mapping`` (a
        class's namespace, a ``mappingproxy``) and the plain containers (dicts, lists, tuples,
        sets) they hold — a configuration class's ``api_key``, its ``DEFAULTS`` dict. Functions
        and other objects are not looked into: walking every method's globals made capturing an
        attrs ``make_class`` class, or its ``__dict__``, 2.3-2.5x slower."""
        options = self.options
        found: list[Any] = []
        pending: list[tuple[Any, Any]] = list(mapping.items())
        seen = 0
        while pending and seen < 10_000:
            key, value = pending.pop()
            seen += 1
            cls = type(value)
            if cls in _SECRET_DATA and isinstance(key, str) and options.redacts(key, value):
                found.append(value)  # data under a secret's name, not a method named so
                continue
            if cls is str:
                if options.secret_shapes and options.redact_secrets:
                    found.extend(secret_shapes.find(value))
            elif cls is dict:
                pending.extend(value.items())
            elif cls in (list, tuple, set, frozenset):
                pending.extend((None, item) for item in value)
        return found

    def _key_path(self, path: str, key: Any) -> str:
        return f"{path}[{clip(repr(key), 60) if type(key) in _ATOMIC else '…'}]"

    def _pairs(self, pairs: list, path: str, depth: int) -> tuple[list, bool]:
        out, changed = [], False
        for k, v in pairs:
            new_k = self.visit(k, path, depth + 1)
            if isinstance(k, str) and self.options.redacts(k, v):
                new_v = self._redact(v, self._key_path(path, k))
            else:
                new_v = self.visit(v, self._key_path(path, k), depth + 1)
            changed = changed or new_k is not k or new_v is not v
            out.append((new_k, new_v))
        return out, changed

    def _dict(self, obj: dict, path: str, depth: int) -> Any:
        copy: dict = {}
        self.memo[id(obj)] = copy  # a cycle back to obj sees the copy, and marks its path changed
        pairs, changed = self._pairs(list(dict.items(obj)), path, depth)
        if not changed:
            self.memo[id(obj)] = obj
            return obj
        copy.update(pairs)
        return copy

    def _redacted_proxy(self, obj: types.MappingProxyType, path: str, depth: int
                        ) -> Any | None:
        """A ``mappingproxy`` whose mapping holds a secret (by its name or its shape): a proxy
        over a copy with the secrets redacted, written by dill; None when it holds none (then
        it is written as before: whole by dill, or a placeholder). Pickle refuses a proxy and
        dill writes it whole, so the secret under a class's ``api_key`` attribute, in
        ``vars(SomeClass)``, reached the payload. Its mapping is walked by a walker of its
        own when ``_secrets_in`` finds one there — so a proxy without a secret is stored as it
        always was, and costs that look only. (A class made at run time, which dill copies with
        its attributes, is a redacted placeholder when they hold a secret: ``_global``.)"""
        if not self._secrets_in(obj):
            return None
        inner = PartWalker(self.options, self.dill_check)
        inner.memo.update(self.memo)
        pairs, _ = inner._pairs(list(obj.items()), path, depth)
        if not inner.redacted:
            return None
        proxy = types.MappingProxyType(dict(pairs))
        self.keep.extend((obj, proxy, *inner.keep))
        self.memo.update(inner.memo)
        self.overrides.update(inner.overrides)
        self.placeholders.extend(inner.placeholders)
        self.redacted.extend(inner.redacted)
        self.secret_values.extend(inner.secret_values)
        self.needs_dill = self.needs_dill or inner.needs_dill
        result = self._by_dill(proxy, path, "a mappingproxy that dill cannot copy")
        self.memo[id(obj)] = result
        return result

    def _list(self, obj: list, path: str, depth: int) -> Any:
        copy: list = []
        self.memo[id(obj)] = copy
        items = [self.visit(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(list(obj))]
        if all(a is b for a, b in zip(items, obj)):
            self.memo[id(obj)] = obj
            return obj
        copy.extend(items)
        return copy

    def _tuple(self, obj: tuple, path: str, depth: int) -> Any:
        self.memo[id(obj)] = obj
        items = tuple(self.visit(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj))
        if all(a is b for a, b in zip(items, obj)):
            return obj
        self.memo[id(obj)] = items
        return items

    def _set(self, obj: Any, path: str, depth: int) -> Any:
        self.memo[id(obj)] = obj
        items = [self.visit(v, f"{path}{{{i}}}", depth + 1) for i, v in enumerate(list(obj))]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        copy = type(obj)(items)
        self.memo[id(obj)] = copy
        return copy

    def _object(self, obj: Any, path: str, depth: int) -> Any:
        cls = type(obj)
        try:
            table_reducer = copyreg.dispatch_table.get(cls)
            reduced = table_reducer(obj) if table_reducer else cls.__reduce_ex__(obj, PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - user reductions may raise anything
            return self._by_dill(obj, path, describe(exc))
        if isinstance(reduced, str):
            return self._global(obj, path)
        return self._reduced(obj, reduced, path, depth, forced=False)

    def _reduced(self, obj: Any, reduced: Any, path: str, depth: int, *, forced: bool) -> Any:
        """Visit the parts of a reduce tuple; record a substitute when a part was replaced."""
        if not isinstance(reduced, tuple) or not 2 <= len(reduced) <= 6:
            return self._placeholder(obj, path, f"invalid reduction {type(reduced).__name__}")
        func, args, state, listitems, dictitems, setter = (reduced + (None,) * 6)[:6]
        self.memo[id(obj)] = obj
        changed = forced
        new_func = self.visit(func, path, depth + 1)
        labels = _arg_labels(type(obj), func, args or (), path)
        new_args = tuple(self._attr_or_visit(label, a, depth)
                         for label, a in zip(labels, args or ()))
        changed = changed or new_func is not func or any(
            a is not b for a, b in zip(new_args, args or ()))
        new_state, state_changed = self._state(state, path, depth)
        items = None if listitems is None else list(listitems)
        new_items = None if items is None else [
            self.visit(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(items)]
        pairs = None if dictitems is None else list(dictitems)
        new_pairs, pairs_changed = (None, False) if pairs is None else self._pairs(
            pairs, path, depth)
        changed = (changed or state_changed or pairs_changed
                   or (items is not None and any(a is not b for a, b in zip(new_items, items))))
        if setter is None and new_state is not None and needs_static_setter(type(obj)):
            setter, changed = rebuild.restore_state, True
        if changed:
            self.overrides[id(obj)] = (new_func, new_args, new_state, new_items, new_pairs,
                                       setter)
        elif items is not None or pairs is not None:
            # The reduction's iterators were consumed here: the pickler needs fresh ones.
            self.overrides[id(obj)] = (func, args, state, items, pairs, setter)
        return obj

    def _attr_or_visit(self, label: str, value: Any, depth: int) -> Any:
        name = label.rpartition(".")[2] if "." in label else ""
        if name and self.options.redacts(name, value):
            return self._redact(value, label)
        return self.visit(value, label, depth + 1)

    def _attrs(self, attrs: dict, path: str, depth: int) -> tuple[dict, bool]:
        out, changed = {}, False
        for name, value in dict.items(attrs):
            label = f"{path}.{name_text(name)}"  # no __str__/__format__ of the program
            new = (self._redact(value, label) if isinstance(name, str)
                   and self.options.redacts(name, value) else self.visit(value, label, depth + 1))
            changed = changed or new is not value
            out[name] = new
        return (out, True) if changed else (attrs, False)

    def _state(self, state: Any, path: str, depth: int) -> tuple[Any, bool]:
        if type(state) is dict:
            return self._attrs(state, path, depth)
        if (type(state) is tuple and len(state) == 2
                and (state[0] is None or type(state[0]) is dict) and type(state[1]) is dict):
            first, c1 = (None, False) if state[0] is None else self._attrs(state[0], path, depth)
            second, c2 = self._attrs(state[1], path, depth)
            return ((first, second), True) if c1 or c2 else (state, False)
        if state is None:
            return None, False
        new = self.visit(state, path, depth + 1)
        return new, new is not state


def _arg_labels(cls: type, func: Any, args: tuple, path: str) -> list[str]:
    """Paths of reduce arguments: namedtuple fields by name (``creds.password``), else the
    object's own path."""
    offset = 0 if func is cls else 1 if (func is copyreg.__newobj__ and args
                                         and args[0] is cls) else None
    fields = cls.__dict__.get("_fields") if offset is not None else None
    if isinstance(fields, tuple) and len(fields) == len(args) - offset:
        return [path] * offset + [f"{path}.{f}" for f in fields]
    return [path] * len(args)


_SETTER_CACHE: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def needs_static_setter(cls: type) -> bool:
    """True for a class with ``__getattr__`` and no ``__setstate__`` (module docstring); cached
    per class, as the fast path asks for every object it writes."""
    try:
        return _SETTER_CACHE[cls]
    except (KeyError, TypeError):
        found = _find_static_setter_need(cls)
    try:
        _SETTER_CACHE[cls] = found
    except TypeError:
        return found  # not weak-referenceable: computed again next time
    return found


def _find_static_setter_need(cls: type) -> bool:
    has_getattr = has_setstate = False
    for klass in getattr(cls, "__mro__", ()):
        if klass is object:
            break
        has_getattr = has_getattr or "__getattr__" in klass.__dict__
        has_setstate = has_setstate or "__setstate__" in klass.__dict__
    return has_getattr and not has_setstate
