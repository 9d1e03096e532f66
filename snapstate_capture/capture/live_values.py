"""Live objects a frame holds — locks, generators and coroutines, open files and sockets,
threads — captured again only when their preview changed.

``values/reducers.py`` refuses these by their type alone: whatever their state, their capture
is a preview (a lock's ``locked``, a file's name and mode, a generator's code) and a
placeholder saying why it is not stored, with no payload. So the preview alone tells whether a
new capture would differ: the same object, in the same slot (so under the same name), with an
equal preview gets the same placeholder, the same identity digest (by type and code,
``values/identity.py``) and so the same ref. ``ValueCache`` used to capture such a local whole
at every step, trying the pickle that fails each time (~120-200 µs a step on the CI machine,
``bench/bench_unchanged_objects.py``); a preview costs a few microseconds.

The object is remembered by weak reference only, so a file is closed and a generator finalized
when the program lets go of it, as without capture; an object that takes no weak reference (a
frame) is captured whole every time, as before.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from ..values import reducers
from ..values.preview import PreviewBuilder

__all__ = ["LiveValues"]

Capture = Callable[[Any, Any, "str | None", Any, None], dict]


class LiveValues:
    """Per-slot memory of live objects' captures: ``is_live(cls)`` (``reducers.REFUSED_BY_TYPE``), then ``ref(slot, value,
    name, out, capture)`` returns the slot's last ref when ``value`` is the object it was
    made for and its preview is unchanged, else ``capture(slot, value, name, out, None)``'s
    (``ValueCache._capture``). ``clear()`` forgets every slot (after a failed write)."""

    def __init__(self, builder: PreviewBuilder) -> None:
        self._builder = builder
        #: slot -> (weak reference to the object, its preview, its ref, the step error text)
        self._slots: dict[Any, tuple[Any, dict[str, Any], dict[str, Any], str | None]] = {}

    @staticmethod
    def is_live(cls: type) -> bool:
        """Whether instances of ``cls`` are refused by type (``reducers.REFUSED_BY_TYPE``; not
        memoryviews, pending futures or modules, whose refusal depends on the object)."""
        return reducers.REDUCERS.lookup(cls) in reducers.REFUSED_BY_TYPE

    def ref(self, slot: Any, value: Any, name: str | None, out: Any, capture: Capture
            ) -> dict[str, Any]:
        """The ref of live object ``value`` at ``slot`` (see the class docstring); the step's
        capture error (the placeholder's reason) is added to ``out.errors`` either way."""
        preview = self._builder.build(value)
        known = self._slots.get(slot)
        if known is not None and known[0]() is value and known[1] == preview:
            if known[3] is not None:
                out.errors.append(known[3])
            return known[2]
        errors = len(out.errors)
        ref = capture(slot, value, name, out, None)
        error = out.errors[-1] if len(out.errors) > errors else None
        try:
            self._slots[slot] = (weakref.ref(value), preview, ref, error)
        except TypeError:  # no weak reference (a frame): captured whole every time
            self._slots.pop(slot, None)
        return ref

    def __len__(self) -> int:
        return len(self._slots)

    def clear(self) -> None:
        """Forget every slot."""
        self._slots.clear()
