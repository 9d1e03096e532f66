"""Which values a traced step stores bounded: those too costly to capture whole at every event.

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
is stored at a traced step as a **bounded** value (``bounded.py``: one level of preview, no
payload, no identity digest). What dill writes by value (``by_value.py``) counts for what it
costs in runs recorded so (``CaptureOptions.bound_by_value``). After ``CLASS_STRIKES``
instances of a class were found big, its instances are taken as big without counting (the
count is the cost this module is there to avoid); the decision depends only on what the run
did before, so a replay and a second recording of the same run decide alike. Builtin
containers are counted every time, but a count stops as soon as it meets an instance of a class
taken as big: whatever reaches a big object is big (pyflakes passes its list of scopes to
thousands of calls; counting 1,000 objects of it at each one was a third of a traced run's time).

Checkpoints, ``@step`` functions and effects are not bounded: they capture in full.
"""

from __future__ import annotations

import dataclasses
import gc
import types
import weakref
from typing import Any

from ..options import DEFAULT_PROBE_LIMIT, ValueOptions
from ..values.static import own_namespace
from .by_value import _by_value, _held_by_value, local_class

__all__ = ["BOUNDED_NOTE", "BY_VALUE_WEIGHT", "CLASS_STRIKES", "FIRST_PROBE_LIMIT",
           "PROBE_LIMIT", "REF_LIMIT", "BigValues", "bounded_note", "by_value_weight", "reach"]

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
    through the interpreter's own slots (``by_value._held_by_value``): no code of the program runs.

    Walks breadth first, one ``gc.get_referents`` call per level for all of it (a call per
    object was a fifth of the walk): the answer does not depend on the order — the count of
    everything reachable when it is at most ``limit`` and nothing reached is of a ``big``
    class, else None.

    ``by_value`` (runs that say ``entry["bounded"]``: ``CaptureOptions.bound_by_value``): what
    dill writes by value counts as what it costs — each function written by value as
    ``by_value_weight(limit)`` objects (a tenth of the limit),
    with the globals dict of one made by ``exec`` (``by_value._module_namespace``). Without it, as
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
