"""Whole-value captures shared between the slots of one step, and with the thread's next step.

An agent hands its state down the stack: the ``sources`` dict of ``run_agent`` is a local of
``research`` one frame down and an argument of the effect below that, and an effect's result is
a local at the next step. Each is a slot of its own in ``ValueCache`` (``valuecache.py``), so
when the value changed each slot captured it again. ``SharedCaptures`` lets a slot take the
capture another slot made of the same object, unchanged (docs/storage.md, "A value met in
several frames").
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["SharedCaptures"]


class SharedCaptures:
    """Whole-value captures shared by every slot of one ``ValueCache``: those of the step being
    built, and of this thread's step before it, by object and content.

    An object met again under another slot — a caller's local that is its callee's argument, a
    checkpoint extra, an effect's result that is a local at the next step — with the same
    detector bytes (its plain pickle: nothing changed in between) is the value already
    captured: the same preview (the same object, so the same repr, address included), payload
    and identity digest, hence the same ref. Only *clean* captures are kept: no capture error,
    placeholder, redacted part or warning, whose texts name the slot's variable (``path``).

    Scoped so that it is wrong only where a slot's own cache is (a repr that reads state
    outside the object, a global, shows its state of one step before, as the slot's own last
    capture would), and changes nothing in the program:

    - the same object only: equal pickles of two objects may preview differently (an address
      in a repr, state that a ``copyreg`` reducer leaves out);
    - the record being built (``out``), whose objects are held only while it is built, and,
      once ``end_record`` says it is complete, for this thread's next record: by weak
      reference, so nothing is kept alive past its time (a finalizer runs when the program
      lets go of its object, as without capture) — objects that take no weak reference (dicts,
      lists) are not carried over;
    - the records of one thread: a thread writes each step before it captures its next, so
      the blobs of its record before are stored; another thread's record may not be written
      yet. A record left unfinished (its capture raised) is never shared from;
    - forgotten whole (``clear``) after a failed write, before a replay goes live, at the end.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._generation = 0  # ``clear`` starts every thread afresh

    def get(self, value: Any, detector: bytes, out: Any) -> dict[str, Any] | None:
        """The ref of ``value``'s clean capture with content ``detector``, made in record
        ``out`` or in this thread's complete record before it; None when there is none."""
        local = self._thread(out)
        key = (id(value), detector)
        found = local.current.get(key)
        if found is not None:
            return found[1] if found[0] is value else None
        found = local.previous.get(key)
        return found[1] if found is not None and found[0]() is value else None

    def put(self, value: Any, detector: bytes, ref: dict[str, Any], out: Any) -> None:
        """Remember ``ref`` as ``value``'s clean capture with content ``detector`` in ``out``."""
        self._thread(out).current[(id(value), detector)] = (value, ref)

    def end_record(self, out: Any) -> None:
        """Record ``out`` is complete (it is written before this thread builds another): keep
        its captures for the next record, by weak reference, and hold nothing of it."""
        local = self._thread(out)
        previous = {}
        for key, (value, ref) in local.current.items():
            try:
                previous[key] = (weakref.ref(value), ref)
            except TypeError:  # a dict, a list: not kept past its record
                pass
        local.record, local.current, local.previous = None, {}, previous

    def _thread(self, out: Any) -> Any:
        """This thread's entries, ``current`` being those of record ``out``."""
        local = self._local
        if getattr(local, "generation", None) != self._generation:
            local.generation, local.record, local.current, local.previous = (
                self._generation, _weak(out), {}, {})
        elif local.record is None or local.record() is not out:
            # Another record: the last one was ended (its entries are ``previous`` now) or
            # left unfinished (its capture raised: it is not written, nothing of it is kept).
            local.record, local.current = _weak(out), {}
        return local

    def clear(self) -> None:
        """Forget every thread's entries (their records were not all written)."""
        self._generation += 1
        self._local = threading.local()


def _weak(record: Any) -> Any:
    """A weak reference to a step's record (a record is not kept alive by being remembered:
    its blobs are the step's new bytes), or None for one that cannot be referred to weakly."""
    try:
        return weakref.ref(record)
    except TypeError:
        return None
