"""Change detectors of values: bytes equal exactly when a capture of the value would be.

A value's detector is its plain pickle (``detector``: made once per step however many frames
hold the object, ``StackCapture.detectors``). Where plain pickle refuses a value only because of
parts it cannot name or store, ``function_detector`` writes those parts as what a capture makes
of them (``_DetectorPickler``): functions pickle cannot name as their code and state, modules
by name, framework machinery and live objects (a client, a lock) as their class, identity and
preview. Library values with pickling hooks of their own that still write all they show
(``pickle_shows_all``: pydantic models, numpy arrays, pandas frames) get their pickle as their
detector too, made by a pickler that refuses parts which may hide state (``strict_detector``).
``ValueCache`` (``valuecache.py``) keeps a slot's detector and captures the value again only
when the detector changed (docs/storage.md, "Objects that cannot be stored").
"""

from __future__ import annotations

import contextvars
import copyreg
import datetime
import decimal
import enum
import fractions
import io
import ipaddress
import marshal
import pathlib
import pickle
import queue
import select
import sys
import types
import uuid
import weakref
from typing import Any

from . import chunked
from ..program_signals import signal_of
from ..store.hashing import canonical_json
from ..values.code_identity import code_digest, live_code
from ..values.preview import MACHINERY, PreviewBuilder
from ..values.reducers import REDUCERS, Refusal
from ..values.registry import class_name
from ..values.static import own_namespace

__all__ = ["IMMUTABLE", "detector", "fixed_zone", "frozen_member", "function_detector", "importable",
           "pickle_shows_all", "plain_pickling", "same_items", "strict_detector"]

#: Library base classes with pickling hooks of their own whose pickle holds every field their
#: preview shows (a pydantic model's ``__getstate__``: its ``__dict__``, extra and private
#: fields and fields set), by ``module.qualname``; a subclass counts while it keeps the base's
#: hooks (``pickle_shows_all``).
SHOWS_ALL_BASES = frozenset({"pydantic.main.BaseModel"})
#: Exact classes (subclasses not: a ``numpy.memmap`` pickles as a plain array) whose own
#: ``__reduce__`` writes all their content — the data, dtype and shape an array's preview and
#: summary are made of, a frame's columns and index, a ``bytearray``'s bytes.
SHOWS_ALL_EXACT = frozenset({"numpy.ndarray", "pandas.DataFrame", "pandas.Series",
                             "pandas.core.frame.DataFrame", "pandas.core.series.Series",
                             "builtins.bytearray"})
_HOOKS = ("__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__getnewargs_ex__",
          "__getnewargs__")
_SHOWS_ALL: "weakref.WeakKeyDictionary[type, bool]" = weakref.WeakKeyDictionary()

#: Classes whose instances are written as themselves (never a machinery or live part; the
#: value cache's builtin containers and scalars).
_BUILTIN = frozenset({list, dict, tuple, set, frozenset, str, bytes, int, float, bool, complex,
                      type(None)})


def detector(value: Any, out: Any) -> bytes:
    """The change detector of ``value`` (its plain pickle) for the step being built into
    ``out``: pickled once per step, however many frames hold the object (``out.detectors``).
    Raises what pickle raises."""
    known = out.detectors.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    data = pickle.dumps(value, chunked.PROTOCOL)
    out.detectors[id(value)] = (value, data)
    return data


def _function_state(*state: Any) -> None:
    """The stand-in callable of a function in a change detector (never called)."""


def _module_named(name: str) -> None:
    """The stand-in callable of a module in a change detector (never called)."""


def _code_key(obj: Any) -> bytes | None:
    """A generator's or coroutine's code, as its identity digest holds it (another generator of
    the same function's other generator expression may take its address), else None."""
    code = live_code(obj)
    return code_digest(code) if code is not None else None


def _shown_part(name: str, address: int, code: bytes | None, preview: bytes) -> None:
    """Stands for a part that is never stored (machinery, a live object) in a change detector,
    with its class, identity (its placeholder's repr names its address) and preview (never
    called)."""


def _local_class(module: str, qualname: str, address: int, state: bytes | None) -> None:
    """Stands for a class pickle cannot name in a change detector (never called): its name,
    identity and state — bases and namespace, which dill writes by value, so a class
    attribute set or changed in place is a new detector (``_DetectorPickler._class_state``)."""


def _descriptor(kind: str, *functions: Any) -> None:
    """Stands for a ``staticmethod``, ``classmethod`` or ``property`` of a local class's
    namespace in a change detector (never called): its kind and the functions it wraps."""


#: Entries of a class's ``__dict__`` that are not the program's state: the type's slots, and the
#: ``__slotnames__`` that pickling an instance caches on its class (``copyreg._slotnames``).
_CLASS_SLOTS = frozenset({"__dict__", "__weakref__", "__slotnames__"})


def _empty_cell() -> None:
    """Marks an empty closure cell in a change detector (never called)."""


def _context(address: int, items: tuple) -> None:
    """Stands for a ``contextvars.Context`` in a change detector (never called): its identity
    and its variables' values — all dill writes of one, and more than its preview shows (an
    address), so a change it holds is never missed."""


def _weak_reference(kind: str, address: int, target_address: int | None, target: Any) -> None:
    """Stands for a weak reference in a change detector (never called): dill writes one as
    its referent, and a preview's repr names both addresses (``<weakref at 0x…; to 'Thing' at
    0x…>``), so the detector holds all three — a referent changed, gone or another object is
    another detector."""


def importable(func: Any) -> bool:
    """True when pickle writes ``func`` (a function or class) by reference: its module holds
    it under its qualified name."""
    module = sys.modules.get(getattr(func, "__module__", None) or "")
    target: Any = module
    for part in func.__qualname__.split("."):
        target = getattr(target, part, None) if "<" not in part else None
        if target is None:
            return False
    return target is func


class _DetectorPickler(pickle.Pickler):
    """A change detector for values plain pickle refuses only because they hold functions it
    cannot name (lambdas, local functions) or modules — a MonkeyPatch, a ``defaultdict`` with a
    lambda factory. Such a function is written as everything its dill payload is made of:
    module, qualified name, code (``marshal`` bytes), defaults, closure cells' contents,
    ``__dict__`` and the globals its code names; a module as its name, a builtin function as
    its name and identity (it cannot change), a local class by its name, identity, bases and
    namespace (dill writes it by value: an attribute set on it is a change of the value); a
    weak reference as its
    identity and its referent's (``_weak_reference``: a registry holding a
    ``WeakKeyDictionary`` was captured whole with dill at every traced call, 1.9 ms each). Equal bytes therefore
    mean an equal capture, as for a plain pickle; anything else pickle refuses still fails.

    Given the run's preview ``builder``, a part that is never stored — framework machinery (an
    HTTP client held by the program's agent object) or a live object refused by type (a lock)
    — is written as its class, its identity and its preview: a capture of the value shows that
    part as its preview, stores a placeholder for it (by type, with its repr: its address) and
    digests it by type, so equal bytes still mean an equal capture (``capture/live_values.py``;
    a client replaced by another of the same base URL is a new part)."""

    def __init__(self, file: io.BytesIO, protocol: int, builder: PreviewBuilder | None = None,
                 classes: frozenset[int] = frozenset()) -> None:
        super().__init__(file, protocol)
        self._builder = builder
        self._protocol = protocol
        self._classes = classes  # the local classes whose state is being written (by id)

    def _class_state(self, cls: type) -> bytes | None:
        """The detector bytes of a local class's bases and namespace (what dill writes of it,
        ``__dict__`` and ``__weakref__`` slots aside); None inside its own state (a class
        attribute holding an instance of the class: by identity there). Raises what pickle
        raises for a part it cannot write (the value is then captured at every step)."""
        if id(cls) in self._classes:
            return None
        buffer = io.BytesIO()
        namespace = [(name, value) for name, value in own_namespace(cls).items()
                     if name not in _CLASS_SLOTS]
        _DetectorPickler(buffer, self._protocol, self._builder,
                         self._classes | {id(cls)}).dump((cls.__bases__, namespace))
        return buffer.getvalue()

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if cls is contextvars.Context:  # a scheduled callback's context (an event loop's)
            return _context, (id(obj), tuple(obj.items()))
        if self._builder is not None and cls not in _BUILTIN and (
                MACHINERY.lookup(cls) is not None or _refused(cls, obj)):
            return _shown_part, (f"{cls.__module__}.{cls.__qualname__}", id(obj),
                                 _code_key(obj), canonical_json(self._builder.build(obj)))
        if cls is types.FunctionType and not importable(obj):
            code = obj.__code__
            cells = tuple(_cell(c) for c in (obj.__closure__ or ()))
            used = obj.__globals__
            names = tuple((n, used[n]) for n in code.co_names if n in used)
            return _function_state, (obj.__module__, obj.__qualname__, marshal.dumps(code),
                                     obj.__defaults__, obj.__kwdefaults__, cells,
                                     obj.__dict__ or None, names)
        if cls is types.ModuleType:
            return _module_named, (obj.__name__,)
        if isinstance(obj, weakref.ref):  # a WeakKeyDictionary's keys, a callback's selfref
            target = obj()
            return _weak_reference, (class_name(cls), id(obj),
                                     None if target is None else id(target), target)
        if isinstance(obj, type) and not importable(obj):
            # a local class: dill writes its bases and namespace, so the detector holds them
            # (as its own detector bytes: a class attribute holding an instance would recurse)
            return _local_class, (obj.__module__, obj.__qualname__, id(obj),
                                  self._class_state(obj))
        if cls in (staticmethod, classmethod):  # in a local class's namespace
            return _descriptor, (cls.__name__, obj.__func__)
        if cls is property:
            return _descriptor, ("property", obj.fget, obj.fset, obj.fdel, obj.__doc__)
        if cls is types.BuiltinFunctionType and isinstance(obj.__self__, (types.ModuleType,
                                                                          type(None))):
            # immutable; by its name, and its identity for one its module no longer holds
            # (the original ``input`` that a MonkeyPatch keeps to restore)
            return _module_named, (obj.__module__, obj.__qualname__, id(obj))
        return NotImplemented


def _refused(cls: type, obj: Any) -> bool:
    """Whether a capture keeps ``obj`` as a placeholder whatever it holds: its reducer refuses
    it (``reducers.REDUCERS``: a lock, a generator, an open file — refused by type, as
    ``live_values.LiveValues.is_live`` says — or a future or task, pending or done), or it is of a compiled
    class neither pickle nor dill writes, whatever the instance holds (``ALWAYS_REFUSED``: an
    event loop's ``epoll``, a ``ContextVar``, an executor's ``SimpleQueue``). Such a part
    shows as its preview in a capture, so the detector writes it as one (``_shown_part``);
    before, a value holding one had no detector and was captured whole at every step. A list,
    not a verdict taken on the first instance met: a ``mappingproxy`` or a weak proxy is
    refused by dill or written by it depending on what it holds (an adversarial review found
    stale payloads that way)."""
    if cls in ALWAYS_REFUSED:
        return True
    reducer = REDUCERS.lookup(cls)
    if reducer is None:
        return False
    try:
        return isinstance(reducer(obj), Refusal)
    except Exception as exc:  # noqa: BLE001 - the capture's walk makes a placeholder of it too
        if exc.__class__ is not RecursionError and signal_of(exc) is not None:
            raise
        return True


#: Compiled classes whose instances neither pickle nor dill writes, whatever they hold
#: (``_refused``; checked on this interpreter, dill 0.4).
ALWAYS_REFUSED = frozenset(kind for kind in (
    getattr(select, "epoll", None), getattr(select, "kqueue", None),
    getattr(select, "devpoll", None), contextvars.ContextVar, queue.SimpleQueue)
    if kind is not None)


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return _empty_cell


#: Classes whose own ``__reduce__`` writes their whole value (nothing of them is left out):
#: parts a library value may hold without making its detector blind (``strict_detector``).
VALUE_PARTS = frozenset({datetime.datetime, datetime.date, datetime.time, datetime.timedelta,
                         datetime.timezone, decimal.Decimal, fractions.Fraction, uuid.UUID,
                         pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.PosixPath,
                         pathlib.WindowsPath, ipaddress.IPv4Address, ipaddress.IPv6Address,
                         ipaddress.IPv4Network, ipaddress.IPv6Network, range, slice, complex})
#: Libraries whose own classes, as parts of one of their values (a frame's block manager and
#: index, an array's dtype), write what the value shows.
TRUSTED_PACKAGES = frozenset({"numpy", "pandas"})
_PLAIN_REDUCE = object.__reduce_ex__


def plain_pickling(cls: type) -> bool:
    """Whether ``cls`` pickles as ``object`` does (its ``__dict__`` and slots, everything),
    and that is all its state: not a class in ``STATE_ELSEWHERE``."""
    return (getattr(cls, "__reduce_ex__", None) is _PLAIN_REDUCE
            and getattr(cls, "__reduce__", None) is object.__reduce__
            and getattr(cls, "__getstate__", object.__getstate__) is object.__getstate__
            and cls not in STATE_ELSEWHERE)


#: Classes that pickle as ``object`` does but keep their state outside the instance: a
#: ``weakref.finalize`` is alive while its class-level ``_registry`` holds it (it has no slots
#: of its own), so its pickle never changed and its preview stayed ``for 'Res' at …`` after
#: ``detach()``. Captured again at every step, as values with their own pickling hooks are (and
#: never taken from the tracer's content cache, which keys values by their pickle).
STATE_ELSEWHERE = frozenset({weakref.finalize})


class _HiddenState(Exception):
    """A part whose own pickling hooks may leave out what its preview shows."""


class _StrictPickler(pickle.Pickler):
    """The plain pickle of a library value (``pickle_shows_all``), refusing any part it holds
    whose pickling hooks may leave out what that part's preview shows (a cache its
    ``__getstate__`` drops but its ``__str__`` prints): then there is no detector and the value
    is captured at every step. Parts that write all they hold: builtins (never asked),
    classes pickling as ``object`` does, library values of ``pickle_shows_all``,
    ``VALUE_PARTS``, enum members, classes and functions (by reference), and the classes of
    ``TRUSTED_PACKAGES``."""

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if (plain_pickling(cls) or cls in VALUE_PARTS or isinstance(obj, (type, enum.Enum))
                or cls in _BY_REFERENCE or cls.__name__.endswith("function_or_method")
                or pickle_shows_all(cls)
                or getattr(cls, "__module__", "").partition(".")[0] in TRUSTED_PACKAGES):
            return NotImplemented
        raise _HiddenState(class_name(cls))


#: Written by reference, by name (a compiled library's functions too: Cython's
#: ``cython_function_or_method``, as a frame's pickle names its block rebuilders).
_BY_REFERENCE = frozenset({types.FunctionType, types.BuiltinFunctionType, types.ModuleType,
                           types.MethodType, types.BuiltinMethodType})


def strict_detector(value: Any) -> bytes:
    """The change detector of a library value (``pickle_shows_all``): its plain pickle, made
    by ``_StrictPickler``. Raises when a part it holds may hide state from its pickle, or
    what pickle raises."""
    buffer = io.BytesIO()
    _StrictPickler(buffer, chunked.PROTOCOL).dump(value)
    return buffer.getvalue()


def pickle_shows_all(cls: type) -> bool:
    """Whether ``cls`` has pickling hooks of its own and still pickles everything its preview
    shows, so that its pickle can be its change detector: one of ``SHOWS_ALL_EXACT``, or a
    subclass of one of ``SHOWS_ALL_BASES`` with no hook of its own (each of ``_HOOKS`` the
    base's) and no ``copyreg`` reducer. Cached per class."""
    try:
        known = _SHOWS_ALL.get(cls)
    except TypeError:
        return False
    if known is not None:
        return known
    shows = False
    if class_name(cls) in SHOWS_ALL_EXACT:
        shows = True
    elif cls not in copyreg.dispatch_table:
        for base in getattr(cls, "__mro__", ())[1:]:
            if class_name(base) in SHOWS_ALL_BASES:
                shows = all(getattr(cls, hook, None) is getattr(base, hook, None)
                            for hook in _HOOKS)
                break
    _SHOWS_ALL[cls] = shows
    return shows


#: Attribute values an enum member may hold and still never change.
_FROZEN_VALUES = frozenset({int, float, bool, str, bytes, type(None)})


def frozen_member(member: Any) -> tuple | None:
    """The attributes of enum ``member`` (``(name, value)`` pairs) when its value and every
    other attribute it holds (``HTTPStatus.OK.phrase``) are scalars, its class aside, else
    None. A member is a singleton of its class, but the program may still set an attribute of
    it again (``Color.RED.hits += 1``): the member is the same capture while it holds the same
    objects (``same_items``). Read statically."""
    try:
        attributes = object.__getattribute__(member, "__dict__")
    except AttributeError:
        return None
    if type(attributes) is not dict:
        return None
    items = tuple(dict.items(attributes))
    if all(type(value) in _FROZEN_VALUES for key, value in items if key != "__objclass__"):
        return items
    return None


def same_items(before: tuple | None, now: tuple | None) -> bool:
    """Whether an enum member's attributes are the same objects under the same names as when
    it was captured (both None for values that are not enum members)."""
    if before is None or now is None:
        return before is now
    return len(before) == len(now) and all(
        a[0] == b[0] and a[1] is b[1] for a, b in zip(before, now))


#: Exact time zones that never change: a datetime or time holding one (or none) is immutable.
_FIXED_ZONES = frozenset({"datetime.timezone", "zoneinfo.ZoneInfo"})


def fixed_zone(value: Any, cls: type) -> bool:
    """Whether ``value`` is an exact ``datetime`` or ``time`` whose ``tzinfo`` is None or an
    exact fixed zone: a tzinfo of the program's own may hold state that changes (and may be
    an object the program later drops, which the cache must not keep alive)."""
    if cls is not datetime.datetime and cls is not datetime.time:
        return False
    zone = value.tzinfo  # a C slot of the exact class: no program code runs
    return zone is None or class_name(type(zone)) in _FIXED_ZONES


#: Exact classes whose instances never change (C-level or frozen by their class, no instance
#: ``__dict__``, no part that is another object): the same object is the same capture, told by
#: identity alone. Subclasses are not here (one may add mutable attributes). Not here: ``slice``
#: (its parts may be any objects: ``slice(0, items)``), ``datetime``/``time`` unless their zone is
#: fixed (``fixed_zone``), pathlib paths (their preview shows slots filled lazily, ``_str``,
#: ``_hash``) and IP networks (an instance ``__dict__`` where ``cached_property`` values land).
IMMUTABLE = frozenset({datetime.date, datetime.timedelta, datetime.timezone, decimal.Decimal,
                       fractions.Fraction, uuid.UUID, ipaddress.IPv4Address,
                       ipaddress.IPv6Address, range})


def function_detector(value: Any, builder: PreviewBuilder | None = None) -> bytes | None:
    """The change detector of a ``value`` plain pickle refused (``_DetectorPickler``; with the
    run's preview ``builder``, machinery and live parts are written as their previews), or
    None when it cannot be made (the value is then captured again at every step). ~µs, C speed
    except one call per function, module or such part met."""
    buffer = io.BytesIO()
    try:
        _DetectorPickler(buffer, chunked.PROTOCOL, builder).dump(value)
    except Exception as exc:  # noqa: BLE001 - truly unpicklable, or recursive through a global
        if exc.__class__ is not RecursionError and signal_of(exc) is not None:
            raise
        return None
    return buffer.getvalue()
