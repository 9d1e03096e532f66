"""Value identity: one canonical, process-independent digest decides whether two values are the same.

Replay's step check, effect-argument matching and ``snapstate diff`` all ask the same question
— "is this the value that was recorded?" — and answer it here (``docs/value-identity.md``).
Pickle bytes cannot answer it (a set pickles in the order of its hash seed, a shared part is
written once and then referred to, a closure is copied with its memory) and neither can ``==``
(for a function, a property or a plain object it is ``is``). The identity digest is built
from the value's *form*, read statically, without running the program's code:

- scalars (``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``) by type and
  value; ``bytearray``, ``range`` and ``slice`` alike;
- ``list`` and ``tuple`` by their members in order; ``dict`` by its items, ``set`` and
  ``frozenset`` by their members, whatever the order (as ``==`` does);
- functions, methods, classes, properties, ``staticmethod``/``classmethod`` objects, code
  objects and modules by qualified name and code hash (``code_digest``) — never by address,
  closure contents or the instance a method is bound to;
- any other object by its class and its state: the instance ``__dict__`` and ``__slots__``
  read statically (no property, ``__getattr__`` or ``__eq__`` runs) for classes that pickle
  plainly, else the parts pickle would save (``copyreg`` table, ``__reduce_ex__(5)``) — what
  its payload holds;
- an ``int`` that is the address (``id``) of a part of the same value or of a local on the
  stack — the key of a memo such as ``{id(f): (name, f)}``, a set of ids already seen — as
  "an address", not by its number: addresses differ in every process (``addresses.py``);
- live machinery (locks, generators, coroutines, frames, files, sockets, threads) by its type
  and, for generators and coroutines, their code; an ``asyncio.Queue`` by its items, bound
  and unfinished count, without the tasks waiting on it (``_QUEUE_SCHEDULING``);
- framework machinery (``machinery.py``: compiled graphs, agents, runners, HTTP and model-API
  clients) by its class alone, wherever it sits: its state is the framework's (a client's
  connection pool is opened by a real call and not by a replayed one), and replay and
  ``snapstate diff`` leave it out of their comparison as they do a machinery local.

A part seen again inside the same value gives the same digest as its first sighting (shared
and copied parts are not told apart); a cycle refers back by depth. The digest is a hex
BLAKE2b-128. ``identity(obj)`` returns None (unknown: callers fall back to payload bytes) when
the value has more than ``budget`` parts or cannot be read.

Code, functions and classes are digested in ``code_identity.py``; the bounded digest each
preview stores at capture is ``identity_at_capture.py``'s.
"""

from __future__ import annotations

import copyreg
import marshal
import sys
import types
from typing import Any, Callable

from .addresses import (could_be_address, may_hold_address, message_without_addresses,
                        stack_addresses, text_without_addresses)
from .code_identity import _callable_digest, _class_digest, _h, _qualified, code_digest, live_code
from .reducers import REDUCERS, REFUSED_BY_TYPE
from .registry import MACHINERY
from .static import static_attributes

__all__ = ["DEFAULT_BUDGET", "identity", "same_objects"]

#: Parts visited at most per value before the digest is given up (unknown, not "different").
DEFAULT_BUDGET = 200_000
_PROTOCOL = 5
_PLAIN_REDUCE = object.__reduce_ex__
_SCALAR_TYPES = frozenset({type(None), bool, int, float, complex, str, bytes})
_LIVE_NAMES = frozenset({
    "_thread.lock", "_thread.RLock", "threading._RLock", "threading.Thread",
    "threading.Condition", "threading.Event", "threading.Semaphore", "_io.TextIOWrapper",
    "_io.BufferedReader", "_io.BufferedWriter", "_io.BufferedRandom", "_io.FileIO",
    "_io.BytesIO", "_io.StringIO", "socket.socket", "sqlite3.Connection", "sqlite3.Cursor",
    "_asyncio.Task", "_asyncio.Future", "concurrent.futures._base.Future",
    "weakref.ReferenceType", "_weakref.ReferenceType", "weakref",
    # synchronization primitives: their counts and waiters are the scheduler's (which task or
    # thread got there first), another at each step of a replay whose effects answer at once
    "threading.BoundedSemaphore", "threading.Barrier", "asyncio.locks.Lock",
    "asyncio.locks.Event", "asyncio.locks.Condition", "asyncio.locks.Semaphore",
    "asyncio.locks.BoundedSemaphore", "asyncio.locks.Barrier",
    # timeouts and cancel scopes: their deadlines are readings of the event loop's clock
    "asyncio.timeouts.Timeout", "anyio._backends._asyncio.CancelScope",
})


class _Unknown(Exception):
    """The value cannot be given a digest (too many parts, or a part that cannot be read)."""


_ADDRESS = b"address"  # an address part digests to _h(_ADDRESS, what it names)
#: What the id of the value itself names: ``copy.deepcopy``'s memo keeps ``memo[id(memo)]``
#: (its first digest held that id as a number, another in every process).
_ROOT = b"root"
#: Walks after the first that name parts again (``identity``): one more than the usual two
#: only when a part's first digest held a named address.
_RENAMINGS = 2


class _Walker:
    """One digest computation: ``digest(obj)`` is 16 bytes (raises ``_Unknown``).

    ``addresses``: ints to digest as addresses, with what each names (a part's digest, a
    local's function and name) — found after a first walk (``identity``), which collects in
    ``big_ints`` the ints it meets that could be addresses."""

    def __init__(self, budget: int, addresses: dict[int, bytes] | None = None) -> None:
        self.budget = budget
        self.done: dict[int, bytes] = {}
        self.keep: list[Any] = []
        self.stack: list[int] = []
        self.addresses = addresses or {}
        self.big_ints: list[int] = []

    def digest(self, obj: Any) -> bytes:
        cls = type(obj)
        if cls in _SCALAR_TYPES:
            if cls is int and could_be_address(obj):
                named = self.addresses.get(obj)
                if named is not None:
                    return _h(_ADDRESS, named)
                self.big_ints.append(obj)
            return _scalar(obj, cls)
        key = id(obj)
        found = self.done.get(key)
        if found is not None:
            return found
        if key in self.stack:  # a cycle: refer to the ancestor by its distance
            return _h(b"cycle", str(len(self.stack) - self.stack.index(key)).encode())
        self.budget -= 1
        if self.budget < 0:
            raise _Unknown("too many parts")
        self.stack.append(key)
        try:
            handler = _HANDLERS.get(cls)
            result = handler(self, obj) if handler is not None else self._other(obj, cls)
        finally:
            self.stack.pop()
        self.done[key] = result
        self.keep.append(obj)  # its id stays its own while the walk runs
        return result

    def items(self, values: Any) -> list[bytes]:
        return [self.digest(v) for v in values]

    def _other(self, obj: Any, cls: type) -> bytes:
        if isinstance(obj, type):
            return _class_digest(obj)
        callable_form = _function_like(obj, cls)
        if callable_form is not None:
            return callable_form
        name = _dotted(cls)
        if name in _LIVE_NAMES or isinstance(obj, _LIVE_TYPES) \
                or REDUCERS.lookup(cls) in REFUSED_BY_TYPE:  # a Thread subclass, a socket's
            return _live(obj, name)
        if MACHINERY.lookup(cls) is not None:
            return _h(b"machinery", name.encode())
        if isinstance(obj, BaseException):
            state = static_attributes(obj) or []
            args = tuple(message_without_addresses(arg) if type(arg) is str else arg
                         for arg in obj.args)  # (kept alive by ``keep`` for the walk)
            return _h(b"exc", _class_digest(cls), self.digest(args), *self._pairs(state))
        if _plain_pickling(cls):
            attrs = static_attributes(obj)
            if attrs is not None:
                left_out = _scheduler_parts(cls)
                if left_out:
                    attrs = [(k, v) for k, v in attrs if k not in left_out]
                parts = [b"obj", _class_digest(cls), *self._pairs(attrs)]
                if isinstance(obj, dict):
                    parts += [b"items", *self._dict_items(dict.items(obj))]
                elif isinstance(obj, (list, tuple)):
                    parts += [b"seq", *self.items(list.__iter__(obj) if isinstance(obj, list)
                                                  else tuple.__iter__(obj))]
                elif isinstance(obj, (set, frozenset)):
                    parts += [b"members", *sorted(self.items(set.__iter__(obj)
                                                             if isinstance(obj, set)
                                                             else frozenset.__iter__(obj)))]
                return _h(*parts)
        return self._reduced(obj, cls)

    def _pairs(self, attrs: list[tuple[str, Any]]) -> list[bytes]:
        return sorted(name.encode() + b"=" + self.digest(value) for name, value in attrs)

    def _dict_items(self, items: Any) -> list[bytes]:
        return sorted(_h(self.digest(k), self.digest(v)) for k, v in items)

    def _reduced(self, obj: Any, cls: type) -> bytes:
        """State as pickle would save it: ``copyreg`` table, else ``__reduce_ex__(5)``."""
        try:
            reducer = copyreg.dispatch_table.get(cls)
            reduced = reducer(obj) if reducer is not None else cls.__reduce_ex__(obj, _PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - unreadable: known only by its type
            return _h(b"unreadable", _qualified(cls), type(exc).__name__.encode())
        if isinstance(reduced, str):
            return _h(b"global", _qualified(cls), reduced.encode())
        if not isinstance(reduced, tuple) or len(reduced) < 2:
            return _h(b"unreadable", _qualified(cls))
        func, args, state, listitems, dictitems = (tuple(reduced) + (None,) * 5)[:5]
        if (_dotted(cls) in _UNORDERED_REDUCED and type(args) is tuple and len(args) == 1
                and type(args[0]) is list):  # members, in an order of the process's own
            parts = [b"reduce", _class_digest(cls), self.digest(func), b"members",
                     *sorted(self.items(args[0]))]
        else:
            parts = [b"reduce", _class_digest(cls), self.digest(func),
                     self.digest(args if args is not None else ())]
        if state is not None:
            if type(state) is dict:
                parts += [b"state", *self._pairs([(str(k), v) for k, v in state.items()])]
            elif (type(state) is tuple and len(state) == 2 and type(state[1]) is dict
                  and (state[0] is None or type(state[0]) is dict)):
                merged = dict(state[0] or {})
                merged.update(state[1])
                parts += [b"state", *self._pairs([(str(k), v) for k, v in merged.items()])]
            else:
                parts += [b"state", self.digest(state)]
        if listitems is not None:
            parts += [b"seq", *self.items(listitems)]
        if dictitems is not None:
            parts += [b"items", *self._dict_items(dictitems)]
        return _h(*parts)


def _scalar(obj: Any, cls: type) -> bytes:
    if cls is str:  # by its text, memory addresses in it blanked (``text_without_addresses``)
        data = text_without_addresses(obj).encode("utf-8", "surrogatepass")
        return b"s" + data if len(data) < 16 else _h(b"s", data)
    if cls is bytes:
        return b"b" + obj if len(obj) < 16 else _h(b"b", obj)
    return marshal.dumps(obj, 0)  # None, bool, int, float, complex: exact and process-free


def _scalars_only(walker: _Walker, values: Any) -> bool:
    """Whether ``values`` are all scalars and none of them an address the walk looks for (its
    big ints are noted, as ``digest`` notes them)."""
    kinds = set(map(type, values))
    if not kinds <= _SCALAR_TYPES:
        return False
    if int in kinds:
        big = [v for v in values if type(v) is int and could_be_address(v)]
        if big:
            walker.big_ints += big
            return not any(value in walker.addresses for value in big)
    return True


def _marshalled(walker: _Walker, values: Any) -> bool:
    """Whether a list's or tuple's ``values`` are digested as one ``marshal`` of them: all
    scalars (``_scalars_only``) and no string that could hold an address (marshal would
    write its digits; each is digested by ``_scalar`` instead, addresses blanked)."""
    if not _scalars_only(walker, values):
        return False
    return str not in set(map(type, values)) or not any(map(_may_hold_address, values))


def _may_hold_address(value: Any) -> bool:
    return type(value) is str and may_hold_address(value)


def _list(walker: _Walker, obj: list) -> bytes:
    items = list.copy(obj)
    if _marshalled(walker, items):
        walker.budget -= len(items) // 8
        return _h(b"list", marshal.dumps(items, 0))
    return _h(b"list", *walker.items(items))


def _tuple(walker: _Walker, obj: tuple) -> bytes:
    if _marshalled(walker, obj):
        walker.budget -= len(obj) // 8
        return _h(b"tuple", marshal.dumps(obj, 0))
    return _h(b"tuple", *walker.items(obj))


def _dict(walker: _Walker, obj: dict) -> bytes:
    items = list(dict.items(obj))
    walker.budget -= len(items) // 4
    return _h(b"dict", *walker._dict_items(items))


def _set(walker: _Walker, obj: Any) -> bytes:
    members = list(obj)
    walker.budget -= len(members) // 8
    tag = b"set" if type(obj) is set else b"frozenset"
    if _scalars_only(walker, members):
        return _h(tag, *sorted(_scalar(m, type(m)) for m in members))
    return _h(tag, *sorted(walker.items(members)))


def _bytearray(walker: _Walker, obj: bytearray) -> bytes:
    return _h(b"bytearray", bytes(obj))


def _function(walker: _Walker, obj: types.FunctionType) -> bytes:
    return _h(b"fn", _qualified(obj), code_digest(obj.__code__))


def _function_like(obj: Any, cls: type) -> bytes | None:
    if cls is types.MethodType:
        func = obj.__func__
        inner = (code_digest(func.__code__) if type(func) is types.FunctionType
                 else _qualified(func))
        return _h(b"method", _qualified(func), inner, _qualified(type(obj.__self__)))
    if cls in (types.BuiltinFunctionType, types.MethodWrapperType, types.WrapperDescriptorType,
               types.MethodDescriptorType, types.ClassMethodDescriptorType,
               types.GetSetDescriptorType, types.MemberDescriptorType):
        owner = getattr(obj, "__objclass__", None)
        self_obj = getattr(obj, "__self__", None)
        where = (_qualified(owner) if owner is not None else
                 _qualified(self_obj) if isinstance(self_obj, (type, types.ModuleType)) else
                 _qualified(type(self_obj)) if self_obj is not None else b"")
        return _h(b"builtin", cls.__name__.encode(), where, _qualified(obj))
    if cls is types.ModuleType:
        name = getattr(obj, "__name__", None)
        return _h(b"module", (name if isinstance(name, str) else "?").encode())
    if cls is types.CodeType:
        return _h(b"code", code_digest(obj))
    if cls in (staticmethod, classmethod, property):
        return _callable_digest(obj)
    if cls in (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType):
        code = live_code(obj)
        return _h(b"live", cls.__name__.encode(), code_digest(code) if code else b"")
    if cls in (types.FrameType, types.TracebackType):
        return _h(b"live", cls.__name__.encode())
    return None


_LIVE_TYPES = (types.FrameType, types.TracebackType, types.GeneratorType, types.CoroutineType,
               types.AsyncGeneratorType)




#: Compiled hash collections whose pickle lists their members in an order of the process's
#: own (a per-process random hash): digested by members, whatever the order, as sets and
#: dicts are (rpds' maps hold jsonschema's and referencing's registries; helper-36: every
#: program holding a validator diverged there, 4 of 4).
_UNORDERED_REDUCED = frozenset({"rpds.HashTrieMap", "rpds.HashTrieSet"})

#: Attributes of asyncio's queues that are the scheduler's, not the program's: the tasks
#: waiting to get or put (which workers reached ``await q.get()`` before this step is timing:
#: another at each step of a replay whose effects answer at once) and the loop bound at the
#: first wait. The items, the bound and the count of unfinished tasks stay.
_QUEUE_SCHEDULING = frozenset({"_getters", "_putters", "_loop"})
_NONE: frozenset[str] = frozenset()


def _scheduler_parts(cls: type) -> frozenset[str]:
    """The attribute names left out of ``cls``'s digest (``_QUEUE_SCHEDULING`` for
    ``asyncio.Queue`` and its subclasses; else none). Nothing is cached by class: a cache
    would keep a class made at run time alive."""
    queues = sys.modules.get("asyncio.queues")
    if queues is not None and issubclass(cls, queues.Queue):  # (type's own check: C)
        return _QUEUE_SCHEDULING
    return _NONE


def _live(obj: Any, name: str) -> bytes:
    return _h(b"live", name.encode())


def _plain_pickling(cls: type) -> bool:
    return (getattr(cls, "__reduce_ex__", None) is _PLAIN_REDUCE
            and getattr(cls, "__reduce__", None) is object.__reduce__
            and getattr(cls, "__getstate__", object.__getstate__) is object.__getstate__
            and copyreg.dispatch_table.get(cls) is None)


_HANDLERS: dict[type, Callable[[_Walker, Any], bytes]] = {
    list: _list, tuple: _tuple, dict: _dict, set: _set, frozenset: _set,
    bytearray: _bytearray, types.FunctionType: _function,
    range: lambda w, o: _h(b"range", marshal.dumps((o.start, o.stop, o.step), 0)),
    slice: lambda w, o: _h(b"slice", w.digest(o.start), w.digest(o.stop), w.digest(o.step)),
    type(Ellipsis): lambda w, o: b"...", type(NotImplemented): lambda w, o: b"NotImplemented",
}


def live_identity(obj: Any) -> str | None:
    """The identity digest of ``obj`` when it is live machinery compared by its type alone (a
    lock, a semaphore, a thread: ``_LIVE_NAMES``), as ``identity`` gives it; else None,
    without walking anything. For the bounded previews of traced steps (``tracing/bounded.py``),
    which carry no digest otherwise: a semaphore reaches its event loop, and its count of
    waiters, the scheduler's, was compared as text."""
    name = _dotted(type(obj))
    return _live(obj, name).hex() if name in _LIVE_NAMES else None


def _dotted(cls: type) -> str:
    """``module.qualname`` of ``cls``, as ``_LIVE_NAMES`` spells classes."""
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}"


def identity(obj: Any, *, budget: int = DEFAULT_BUDGET) -> str | None:
    """The identity digest of ``obj`` (32 hex digits), or None when it has more than ``budget``
    parts or cannot be read. Equal digests mean the same value in the sense of the module
    docstring; never raises (RecursionError and the like give None).

    A value holding ints that could be addresses is walked twice when one of them is the id
    of one of its own parts or of a local on the stack (``addresses.py``): the first walk
    finds them, the second digests them as addresses."""
    try:
        if type(obj) in _SCALAR_TYPES:
            return _h(b"v", _scalar(obj, type(obj))).hex()
        walker = _Walker(budget)
        digest = walker.digest(obj)
        if walker.big_ints:
            big = set(walker.big_ints)
            root = id(obj)
            named = {k: _ROOT if k == root else b"part " + walker.done[k]
                     for k in big if k in walker.done}
            if len(named) < len(big):
                memo = type(obj) in (set, frozenset, dict)  # (addresses.stack_addresses)
                named.update((k, b"local " + where.encode())
                             for k, where in stack_addresses(big - named.keys(),
                                                             memo=memo).items())
            for _ in range(_RENAMINGS):
                if not named:
                    break
                walker = _Walker(budget, named)
                digest = walker.digest(obj)
                # a part holding a named address had its number in its first digest: named
                # again by its digest with the address named (a memo's value holding the memo)
                again = {k: b"part " + walker.done[k] if name[:5] == b"part " else name
                         for k, name in named.items()}
                if again == named:
                    break
                named = again
        return digest.hex()
    except (_Unknown, RecursionError, MemoryError, ValueError, TypeError, RuntimeError):
        return None
    except Exception:  # noqa: BLE001 - a user __reduce_ex__ may raise anything: unknown
        return None


def same_objects(a: Any, b: Any) -> bool:
    """Two live (or loaded) objects are the same value: equal full identity digests — never
    ``==``, which runs their code and is ``is`` for functions and plain objects. False when
    either is too big to walk (``DEFAULT_BUDGET``)."""
    first = identity(a)
    return first is not None and first == identity(b)
