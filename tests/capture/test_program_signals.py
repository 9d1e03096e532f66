"""``program_signals``: telling what the program's signal handlers raised inside capture code
from capture's own failures."""

from __future__ import annotations

import signal

import pytest

from snapstate_capture.program_signals import signal_of


class Timeout(Exception):
    pass


@pytest.fixture
def alarm_handler():
    def on_alarm(signum, frame):
        raise Timeout("too slow")

    before = signal.signal(signal.SIGALRM, on_alarm)
    yield
    signal.signal(signal.SIGALRM, before)


def _guarded(work):
    try:
        work()
    except BaseException as exc:  # noqa: BLE001 - what a capture guard sees
        return exc
    raise AssertionError("nothing raised")


def test_an_exception_raised_by_the_programs_handler_is_named_with_its_signal(alarm_handler):
    def capture_work():
        signal.raise_signal(signal.SIGALRM)  # the handler runs here, inside "capture"

    exc = _guarded(capture_work)
    assert isinstance(exc, Timeout) and signal_of(exc) == signal.SIGALRM


def test_captures_own_failures_are_not_the_programs(alarm_handler):
    assert signal_of(_guarded(lambda: {}["missing"])) is None
    assert signal_of(_guarded(lambda: int("x"))) is None

    def deeper():
        raise Timeout("raised by capture code, no handler ran")  # the same type

    assert signal_of(_guarded(deeper)) is None


def test_ctrl_c_under_pythons_own_handler_is_sigint():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal_of(_guarded(lambda: signal.raise_signal(signal.SIGINT))) == signal.SIGINT
