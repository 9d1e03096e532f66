"""Big objects at traced steps: one level of preview, no payload, at a cost that does not grow.

Call tracing captures every local of every traced frame at every call, return and caller
refresh. A full capture pickles the whole object graph to tell whether it changed, then walks
it for its identity digest and pickles it again for its payload — fine for an agent's state,
quadratic for a program whose ``self`` holds the world: pyflakes' ``Checker`` (the module's
tree, every scope and binding) is a local of nearly every one of its 25,000 traced steps on a
300-line file, and recording took over ten minutes where plain python takes a tenth of a second.

So an object that reaches more than ``PROBE_LIMIT`` other objects (counted through the
interpreter's own traversal, ``gc.get_referents``, which runs none of the program's code;
strings, numbers, classes, functions and modules are not counted: they add no parts to walk),
or whose parts hold more than ``REF_LIMIT`` references, those leaves included (a deque of
20,000 numbers is one object, but as costly to pickle at every call as 20,000 objects),
is stored at a traced step as a **bounded** value: its preview one level deep — its type, its
repr, its attributes or first items with their scalars and sizes — marked ``"bounded"``, and
no payload and no identity digest. Replay and ``snapstate diff`` compare such values by that
preview (memory addresses blanked), so a change deeper inside is seen where it reaches a
local or a return value of its own. After ``CLASS_STRIKES`` instances of a class were found
big, its instances are taken as big without counting (the count is the cost this module is
there to avoid); the decision depends only on what the run did before, so a replay and a
second recording of the same run decide alike. Builtin containers are counted every time,
but a count stops as soon as it meets an instance of a class taken as big: whatever reaches a big
object is big (pyflakes passes its list of scopes to thousands of calls; counting 1,000 objects
of it at each one was a third of a traced run's time).

Checkpoints, ``@step`` functions and effects are not bounded: they capture in full.
"""

from __future__ import annotations

import dataclasses
import gc
import inspect
import itertools
import sys
import types
import weakref
from typing import Any

from ..options import DEFAULT_PROBE_LIMIT, ValueOptions
from ..values.addresses import (blank_addresses, could_be_address, part_address,
                                stack_addresses)
from ..values.preview import PreviewBuilder, redacted_preview
from ..values.identity import _plain_pickling
from ..values.registry import class_name
from ..values.scrub import scrub, secret_texts
from ..values.static import own_namespace, static_attributes

__all__ = ["BOUNDED_NOTE", "BY_VALUE_WEIGHT", "CLASS_STRIKES", "FIRST_PROBE_LIMIT",
           "PROBE_LIMIT", "REF_LIMIT", "BigValues", "bounded_note", "bounded_preview",
           "by_value_weight", "key_holds_local_class",
           "local_class", "reach"]

#: Objects an object may reach before it is bounded at traced steps (``CaptureOptions.
#: probe_limit``'s default). A value under the limit is captured in full whenever it changed:
#: preview, identity digest and payload, ~20 µs an object it reaches — a sqlparse token, whose
#: ``parent`` reaches its statement's tree (143 objects), cost 2.7 ms at each of 42,000 call
#: steps, and recording a one-statement format took 55 s of CPU where plain python takes
#: 0.07 s; at 64, 3.5 s (pyflakes on copy.py: 2.6 → 2.1 s). An agent's state of a few
#: dataclasses stays whole; explicit steps (checkpoints, effects, ``@step``) are never bounded.
PROBE_LIMIT = DEFAULT_PROBE_LIMIT
#: The limit of runs recorded before it was stored in the run (``entry["probe_limit"]``).
FIRST_PROBE_LIMIT = 300
#: References (leaves included: numbers, strings) an object's parts may hold before it is
#: bounded at traced steps. A plain object holding a deque of 20,000 ints is one object to
#: ``PROBE_LIMIT`` but 100 kB to pickle and hash at every call (more-itertools' ``peekable``,
#: drained item by item in its own tests: quadratic, minutes for one test).
REF_LIMIT = 10_000
#: Instances of one class found big before the class is taken as big without counting.
CLASS_STRIKES = 3
#: What a function written by value counts for in ``reach`` at ``FIRST_PROBE_LIMIT`` (a tenth of
#: the limit in general, ``by_value_weight``): its code object, names, constants,
#: cells and globals go through dill's Python-level pickler — one made by ``exec`` cost 1.4 ms
#: of capture where a list of 30 plain objects (a count of 60) cost 0.6 ms (12-06, 2 cores).
#: Ten such functions make a value big.
BY_VALUE_WEIGHT = 30


def bounded_note(limit: int) -> str:
    """The ``"bounded"`` text of a bounded value's preview in a run recorded with probe limit
    ``limit``. It is stored in the preview, so it is part of the value's key: another text
    makes every bounded value of an older traced run differ from its replay (a run of mistune
    recorded before a reworded note diverged at its first bounded ``BlockState``). It also
    stands for values bounded for their size (``value_encoder.MARSHAL_BYTES``), which
    docs/storage.md says."""
    return f"over {limit:,} objects: one level kept at traced steps, no payload"


#: The note of runs recorded with the default limit.
BOUNDED_NOTE = bounded_note(PROBE_LIMIT)

#: Kinds that add nothing to walk: leaves of any capture (pickled by value or by reference).
_LEAVES = frozenset({str, bytes, int, float, complex, bool, type(None), type, types.ModuleType,
                     types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                     types.CodeType, types.FrameType, types.GetSetDescriptorType,
                     types.MemberDescriptorType, types.WrapperDescriptorType,
                     types.MethodDescriptorType, types.MethodWrapperType, property,
                     staticmethod, classmethod, type(Ellipsis)})
_BUILTIN = frozenset({dict, list, tuple, set, frozenset})
#: Leaves that may be pickled by value: bound to an instance (``obj.method``, ``[].append``,
#: ``obj.__eq__``) or a function that cannot be imported by name (a closure, a lambda).
_BY_VALUE = frozenset({types.MethodType, types.BuiltinFunctionType, types.MethodWrapperType,
                       types.FunctionType})
_CONTAINERS = (dict, list, tuple, set, frozenset)
_BASES = {cls: cls for cls in _CONTAINERS}  # the containers themselves (subclasses: isinstance)

#: Children previewed by the ordinary builder (a bounded text); any other child is summarised
#: by its type and size without running its repr or reading its items.
_CHEAP = frozenset({str, bytes, int, float, complex, bool, type(None)})


def by_value_weight(limit: int) -> int:
    """What a function written by value counts for in ``reach`` under probe limit ``limit``:
    a tenth of it (ten make a value big), ``BY_VALUE_WEIGHT`` at ``FIRST_PROBE_LIMIT``."""
    return max(1, limit * BY_VALUE_WEIGHT // FIRST_PROBE_LIMIT)


def reach(obj: Any, limit: int = PROBE_LIMIT, big: Any = (), by_value: bool = True
          ) -> int | None:
    """How many objects ``obj`` reaches (itself excluded, leaves of ``_LEAVES`` not counted),
    or None as soon as it is more than ``limit``, its parts hold more than ``REF_LIMIT``
    references (leaves included), or it reaches an instance of a class in ``big`` (classes
    taken as big). Reads references through ``tp_traverse``
    (``gc.get_referents``), and what a function or bound method written by value holds
    through the interpreter's own slots (``_held_by_value``): no code of the program runs.

    Walks breadth first, one ``gc.get_referents`` call per level for all of it (a call per
    object was a fifth of the walk): the answer does not depend on the order — the count of
    everything reachable when it is at most ``limit`` and nothing reached is of a ``big``
    class, else None.

    ``by_value`` (runs that say ``entry["bounded"]``: ``CaptureOptions.bound_by_value``): what
    dill writes by value counts as what it costs — each function written by value as
    ``by_value_weight(limit)`` objects (a tenth of the limit),
    with the globals dict of one made by ``exec`` (``_module_namespace``). Without it, as
    runs recorded before counted: such functions are leaves (closure, defaults and
    ``__dict__`` walked). A class is a leaf either way: an instance of a class defined at run
    time is captured whole (``BigValues.is_big`` weighs such a class only as a value itself). attrs' class builder held 150 generated methods, a 164-object count and
    ~30 ms of dill at each of its calls."""
    weight = by_value_weight(limit)
    seen = {id(obj)}
    level = [obj]
    count = 0
    referents = gc.get_referents
    leaves = _LEAVES
    refs = 0
    while level:
        below = []
        children = referents(*level)
        refs += len(children)
        if refs > REF_LIMIT:
            return None
        for child in children:
            cls = type(child)
            if cls in leaves or issubclass(cls, type):  # never ``isinstance``: no __class__ read
                if cls in _BY_VALUE:
                    held = _held_by_value(child, cls, by_value)
                    if held is not None:
                        children.extend(held)  # walked as children are
                        if by_value and cls is types.FunctionType:
                            count += weight
                            if count > limit:
                                return None
                continue
            if cls in big:
                return None
            key = id(child)
            if key in seen:
                continue
            seen.add(key)
            count += 1
            if count > limit:
                return None
            below.append(child)
        level = below
    return count


def _held_by_value(leaf: Any, cls: type, globs: bool = True) -> list[Any] | None:
    """What a payload writes with a function or method of ``_BY_VALUE`` met inside a value,
    for ``reach`` to walk: the instance a method is bound to, a function's closure cells,
    defaults and ``__dict__`` when it is pickled by value (``_by_value``) — a lambda kept in
    an object, whose closure holds a unittest ``TestCase`` and through it pytest's session,
    made a 60-object count of a 2 s capture at every call (more-itertools' ``callback_iter``
    tests). The cells themselves are walked (a cell is no leaf). With ``globs``, the globals
    of a function made by ``exec`` too. None when ``leaf`` is written by reference. Reads
    C-level slots of the interpreter's own types: no program code runs."""
    try:
        if not _by_value(leaf, globs):
            return None
        if cls is types.FunctionType:
            own = leaf.__globals__ if globs and not _module_namespace(leaf) else None
            return [part for part in (leaf.__closure__, leaf.__defaults__, leaf.__kwdefaults__,
                                      leaf.__dict__, own) if part]
        return [leaf.__self__]
    except Exception:  # noqa: BLE001 - an unreadable leaf: counted as before, not walked
        return None


class BigValues:
    """Decides which values a traced step stores bounded, and the options of their preview.

    ``is_big(value)`` → bool, never raises; ``options``: ``ValueOptions`` of a bounded preview
    (the run's own, one level deep).
    """

    def __init__(self, options: ValueOptions, by_value: bool = True,
                 limit: int = PROBE_LIMIT) -> None:
        self.options = dataclasses.replace(options, max_depth=min(1, options.max_depth))
        self.by_value = by_value  # ``reach``'s rule for what dill writes by value
        #: objects a value may reach before it is big (the run's ``probe_limit``)
        self.limit = limit
        #: the ``"bounded"`` text of this run's bounded previews (``bounded_note``)
        self.note = bounded_note(limit)
        self._strikes: "weakref.WeakKeyDictionary[type, int]" = weakref.WeakKeyDictionary()
        #: the classes taken as big (``CLASS_STRIKES`` reached): a count stops at their instances.
        #: A plain set (a ``WeakSet`` lookup cost more than the count it saves); the classes are
        #: held as the encoder's caches hold them, until the recording ends.
        self._big: set[type] = set()

    def is_big(self, value: Any) -> bool:
        """True when ``value`` reaches more than ``limit`` objects (or its class was found
        big ``CLASS_STRIKES`` times)."""
        cls = type(value)
        by_value = self.by_value
        if issubclass(cls, type) and by_value and local_class(value):
            # written by dill with its namespace: weighed by what that holds (a class attrs
            # made holds a dozen generated methods, each ``BY_VALUE_WEIGHT``)
            try:
                return reach(dict(own_namespace(value)), self.limit, self._big, True) is None
            except Exception:  # noqa: BLE001 - an unreadable class: captured as before
                return False
        if (cls in _LEAVES and not (cls in _BY_VALUE and _by_value(value, by_value))
                or issubclass(cls, type)):
            # Captured by reference and compared by name (a module, a function, a class): what
            # it reaches is no part of the value. ``sys`` reaches sys.path and sys.modules,
            # which differ between a recording and its replay. A method bound to an instance
            # and a nested function or lambda are not: their pickles hold the instance or the
            # closure (pyflakes' handlers are bound methods of its Checker, returned by
            # ``getNodeHandler`` thousands of times; its deferred ``runFunction`` closures hold
            # the Checker too), so they are counted.
            return False
        builtin = cls in _BUILTIN
        if not builtin and cls in self._big:
            return True
        try:
            if reach(value, self.limit, self._big, by_value) is not None:
                return False
        except Exception:  # noqa: BLE001 - an unreadable object: captured as before
            return False
        self._strike(cls, builtin)
        return True

    def _strike(self, cls: type, builtin: bool) -> None:
        """One more instance of ``cls`` found big (``CLASS_STRIKES``)."""
        if not builtin:
            try:
                strikes = self._strikes[cls] = self._strikes.get(cls, 0) + 1
                if strikes >= CLASS_STRIKES and not local_class(cls):
                    self._big.add(cls)  # (held: a class defined at run time must be let go)
            except TypeError:  # a class that cannot be weakly referenced: counted every time
                pass


def _by_value(leaf: Any, exec_made: bool = True) -> bool:
    """True when a function or method of ``_BY_VALUE`` is pickled with what it holds: a method
    bound to an instance (not a module or class), a function not importable by its qualified
    name, or one with a closure that is not found again under that name (a decorator's wrapper
    that is its module's global — ``@snap.step``, ``functools.wraps`` — is written by
    reference, and what its closure and globals reach is no part of it: they differ between a
    recording and its replay). Reads C-level slots and namespaces statically: no program code
    runs. ``exec_made``: a function whose globals are no module's namespace counts too
    (``CaptureOptions.bound_by_value``)."""
    if type(leaf) is types.FunctionType:
        if "<" in leaf.__qualname__:
            return True
        if exec_made and not _module_namespace(leaf):
            # made by exec, or a wrapper defined elsewhere (``@snap.step``'s, which
            # ``functools.wraps`` names after the function): by value unless found by name
            return not _found_by_name(leaf)
        return leaf.__closure__ is not None and not _found_by_name(leaf)
    try:
        owner = leaf.__self__
    except AttributeError:
        return False
    return not (owner is None or issubclass(type(owner), (types.ModuleType, type)))


def _module_namespace(func: types.FunctionType) -> bool:
    """Whether ``func``'s globals are its module's namespace (a function made by ``exec`` into
    a dict of its own — attrs' generated ``__init__``, a template engine's — is written by
    value with that dict). Reads ``sys.modules`` and the module's ``__dict__``: no code runs."""
    module = sys.modules.get(func.__module__) if isinstance(func.__module__, str) else None
    try:
        return module is not None and object.__getattribute__(module, "__dict__") \
            is func.__globals__
    except AttributeError:
        return False


#: ``Py_TPFLAGS_HEAPTYPE``: a class made at run time (by a ``class`` statement or ``type()``).
_HEAP_TYPE = 1 << 9
#: Classes met by ``reach`` and whether pickle cannot name them (``local_class``).
_LOCAL: "weakref.WeakKeyDictionary[type, bool]" = weakref.WeakKeyDictionary()


def local_class(cls: Any) -> bool:
    """Whether the class ``cls`` is one pickle cannot name — defined in a function, or not yet
    bound in its module (a class decorator's builder holds it, attrs' ``make_class`` made
    it) — which dill writes by value, namespace and generated methods included: ~3 ms a
    capture for a small attrs class (12-06). With ``by_value``, such a class as a value is
    weighed by its namespace (``BigValues.is_big``). Cached per class (a class found by name
    stays so); read statically (``type``'s own slots, ``inspect.getattr_static``)."""
    try:
        found = _LOCAL.get(cls)
    except TypeError:
        return False
    if found is None:
        try:
            if not type.__dict__["__flags__"].__get__(cls) & _HEAP_TYPE:
                _LOCAL[cls] = False  # a static type (NoneType, function): pickle's own
                return False
            name = type.__dict__["__module__"].__get__(cls)  # no code of the program runs
            qualname = type.__dict__["__qualname__"].__get__(cls)
        except Exception:  # noqa: BLE001 - an unreadable class: taken as named
            return False
        found = not _named(name, qualname, cls)
        if not found:
            _LOCAL[cls] = found  # by name now: by name for good (a local one may get bound)
    return found


def _found_by_name(func: types.FunctionType) -> bool:
    """Whether ``func`` is what its module's namespace holds under its qualified name, read
    statically (``inspect.getattr_static``: no module ``__getattr__``, no descriptor runs) —
    ``values.reducers.importable`` asks the same with ``getattr``, as pickle does, for the
    payload; here a name found only dynamically counts as not found (the value is counted)."""
    return _named(func.__module__, func.__qualname__, func)


def _named(module: Any, qualname: Any, obj: Any) -> bool:
    """Whether module ``module``'s namespace holds ``obj`` under ``qualname``, read statically
    (``inspect.getattr_static``); False for anything unreadable."""
    target: Any = sys.modules.get(module) if isinstance(module, str) else None
    try:
        for part in qualname.split("."):
            if target is None:
                return False
            target = inspect.getattr_static(target, part, None)
    except Exception:  # noqa: BLE001 - a namespace that cannot be read: not by name
        return False
    return target is obj


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
