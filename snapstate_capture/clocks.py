"""The clocks SnapState reads for itself, out of the program's reach.

A program may replace ``time.time``, ``time.monotonic`` or ``time.perf_counter`` while it runs:
``unittest.mock.patch("time.monotonic", side_effect=[10.0, 12.5])``, or freezegun, which
swaps the ``time`` module's functions and every module-level name bound to one of them
(``_wall = time.time`` included) for its fakes. Capture that read the clock through those names
read the program's clock: the tracer's call at each step used up a mock's ``side_effect``
(the program then raised ``StopIteration``) and counted in its ``call_count``, advanced
freezegun's ``auto_tick_seconds`` clock once per step (``time.time()`` jumped 13 s where the
program waited 1 s), and stamped steps with the frozen time.

``Clocks`` holds the interpreter's own functions as attributes of a class: neither a patch of
the ``time`` module nor freezegun's scan of module attributes reaches a class's namespace.
Reading one costs what ``time.time()`` does (two attribute lookups and the C call). Capture
code reads ``Clocks.time()``, never ``time.time()``.

They are taken when this module is imported, which may be while a program's patch is on:
freezegun's scan reads every module's attributes, and ``snapstate_capture``'s lazy ones import
their modules, this one included, after freezegun has put its fakes in. A ``time`` attribute
that is not the ``time`` module's own built-in is then passed over for ``clock_gettime`` of the
clock it reads on this platform (``CLOCK_REALTIME``; ``CLOCK_MONOTONIC`` for ``monotonic``
and ``perf_counter``, as ``time.get_clock_info`` says).
"""

from __future__ import annotations

import functools
import time as _time
import types
from typing import Callable


def _own(name: str, clock_id: int) -> Callable[[], float]:
    """``time.<name>`` when it is the interpreter's built-in, else that clock read directly."""
    found = _time.__dict__.get(name)
    if type(found) is types.BuiltinFunctionType and found.__self__ is _time:
        return found
    return functools.partial(_time.clock_gettime, clock_id)


class Clocks:
    """The interpreter's clocks, out of the program's reach (see the module docstring):
    ``Clocks.time()``, ``Clocks.monotonic()``, ``Clocks.perf_counter()``."""

    time = _own("time", _time.CLOCK_REALTIME)
    monotonic = _own("monotonic", _time.CLOCK_MONOTONIC)
    perf_counter = _own("perf_counter", _time.CLOCK_MONOTONIC)
