"""Objects whose own pickling may wait for a lock that is taken right now.

A class that drops its lock from its pickle typically takes the lock first
(``def __getstate__(self): with self._lock: state = self.__dict__.copy()``). Capture pickles a
value to detect whether it changed and to write its payload, and pickle runs that
``__getstate__``; at a traced call made while the program holds the lock — ``add()`` calling
``self._append()`` under ``with self._lock`` — it waited for the lock its own thread held:
the program hung (helper-37, ``pytest --snapstate``, 3 of 3). ``holds_taken_lock`` tells such
an object beforehand, reading nothing but its attributes, statically, and the locks' own C
state; the capture then shows it bounded (one level, no pickle, no code of the program).
"""

from __future__ import annotations

import threading
from typing import Any

from .identity import _plain_pickling
from .static import static_attributes

_LOCK = type(threading.Lock())
_RLOCK = type(threading.RLock())
#: What a bounded capture of such an object says instead of its payload.
TAKEN_LOCK_NOTE = ("holds a lock taken at this step: not pickled (its own pickling could wait "
                   "for the lock); shown one level deep")


def holds_taken_lock(obj: Any) -> bool:
    """True when ``obj``'s class pickles with code of its own (``__getstate__``,
    ``__reduce__``, ``__reduce_ex__`` or a ``copyreg`` entry) and one of its attributes is a
    ``threading.Lock`` or ``RLock`` taken now. Never raises; runs no code of the program."""
    try:
        if _plain_pickling(type(obj)):
            return False  # pickled plainly: pickle refuses a lock, it never waits for one
        for _, value in static_attributes(obj) or ():
            kind = type(value)
            if kind is _LOCK and value.locked():
                return True
            if kind is _RLOCK and repr(value).startswith("<locked"):  # (C repr)
                return True
    except Exception:  # noqa: BLE001 - unreadable: pickling decides, as before
        return False
    return False
