"""What the program's own signal handlers raise while SnapState's code runs in its thread.

CPython runs a Python-level signal handler in the main thread at the next point its
interpreter loop checks for one (after a call, at a loop's jump back), and that point may be
inside SnapState's code: a trace function, the tracer's gc callback, a value's capture. What
the handler raises there belongs to the program — ``KeyboardInterrupt`` from Ctrl-C,
``SystemExit`` from a ``SIGTERM`` handler, the timeout a ``SIGALRM`` handler raises — and
capture must hand it on, never swallow it:

- capture's ``except Exception`` guards re-raise what ``signal_of`` names (a trace function's
  exception reaches the program where the handler ran, as it would have unrecorded). They
  ask only for what is no ``RecursionError``: a call at the recursion limit raises one
  again, into the program, and no handler raises one;
- a gc callback cannot raise: Python gives its exception to ``sys.unraisablehook``, which
  prints "Exception ignored in …" and drops it (one Ctrl-C in forty was lost so in an
  allocation-heavy loop under ``--trace calls``; under ``--trace lines`` one in three, raised
  on the callback's first instruction, before any ``try`` of its own).
  ``hand_back_unraisable`` puts a hook before it that gives such an exception back to the
  program (``hand_back``) when it comes from a callback of ours.
"""

from __future__ import annotations

import signal
import sys
import time
import types
from typing import Any, Callable

__all__ = ["hand_back", "hand_back_unraisable", "signal_of"]


def signal_of(exc: BaseException) -> int | None:
    """The number of the signal whose Python-level handler raised ``exc`` (the handler's frame
    is in ``exc``'s traceback), or ``SIGINT`` for a ``KeyboardInterrupt`` while Python's
    default handler is installed; None for anything else (a capture failure of our own).
    Looks up the installed handlers each time: call it on the error path only (an exception
    raised in the guarding frame itself, by C code it called, is decided at once)."""
    tb = exc.__traceback__
    if isinstance(exc, KeyboardInterrupt) and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        return signal.SIGINT
    if tb is None or tb.tb_next is None:  # no frame below the guard's: no handler ran
        return None
    codes = _handler_codes()
    while tb is not None:
        found = codes.get(tb.tb_frame.f_code)
        if found is not None:
            return found
        tb = tb.tb_next
    return None


try:  # the C module under ``signal``: its ``getsignal`` without the enum conversion (~2x less)
    import _signal as _raw
except ImportError:  # another interpreter: the public one
    _raw = signal  # type: ignore[assignment]
_NUMBERS = tuple(sorted(int(number) for number in signal.valid_signals()))


def _handler_codes() -> dict[types.CodeType, int]:
    """The code of each installed Python-level handler, with its signal (~3 µs)."""
    codes: dict[types.CodeType, int] = {}
    for number in _NUMBERS:
        try:
            handler = _raw.getsignal(number)
        except (OSError, ValueError):
            continue
        if handler is None or isinstance(handler, int):  # SIG_DFL, SIG_IGN, not from Python
            continue
        code = _code_of(handler)
        if code is not None:
            codes.setdefault(code, number)
    return codes


def _code_of(handler: Any) -> types.CodeType | None:
    """The code a Python-level handler runs: a function's or a bound method's (which forwards
    ``__code__``), a callable object's ``__call__``; None for C functions."""
    code = getattr(handler, "__code__", None)
    if code is None and not isinstance(handler, types.BuiltinFunctionType):
        call = getattr(type(handler), "__call__", None)
        code = getattr(call, "__code__", None)
    return code if isinstance(code, types.CodeType) else None


def hand_back(exc: BaseException, number: int) -> None:
    """From a gc callback in the main thread: make ``exc``, raised there by the handler of
    signal ``number``, reach the program as soon as the callback has returned. The handler
    already ran, so it is not run again: for one delivery the signal's handler is one that
    puts the program's handler back and raises ``exc``; a thread of the interpreter's own
    (``_thread``, not ``threading``: nothing to join) trips the signal a millisecond later,
    once the callback is done. Never raises."""
    import _thread

    try:
        original = signal.getsignal(number)

        def again(signum: int, frame: Any) -> None:
            signal.signal(signum, original)
            raise exc

        signal.signal(number, again)
        _thread.start_new_thread(_trip, (number,))
    except Exception:  # noqa: BLE001 - not the main thread, or no thread: nothing more to do
        pass


def hand_back_unraisable(ours: Callable[[Any], bool]) -> Callable[[], None]:
    """Put a ``sys.unraisablehook`` before the one installed: an exception the program's signal
    handler raised in a callback ``ours(culprit)`` says is ours (``culprit``: what Python
    reports it in, the gc callback) goes back to the program (``hand_back``); anything else,
    and anything once this is removed, goes to the hook that was there. Returns the function
    that removes it (only while it is still the installed hook: a program's own hook set
    since stays)."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if exc is not None and installed[0] and ours(unraisable.object):
            number = signal_of(exc)
            if number is not None:
                hand_back(exc, number)
                return
        previous(unraisable)

    installed = [True]
    sys.unraisablehook = hook

    def remove() -> None:
        installed[0] = False
        if sys.unraisablehook is hook:
            sys.unraisablehook = previous

    return remove


def _trip(number: int) -> None:
    import _thread

    time.sleep(0.001)
    try:
        _thread.interrupt_main(number)
    except Exception:  # noqa: BLE001 - the interpreter is shutting down
        pass
