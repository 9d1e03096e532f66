"""The interpreter's own C reprs are never timed (``values/reprs.py``): a function's repr
timed at 0.6 s on a loaded machine (the process descheduled) marked ``function`` slow for the
whole replay child, every function's preview became ``<repr failed: SlowRepr: …>``, and a
traced Jinja replay diverged at the next step holding one."""

from __future__ import annotations

import types

import pytest

from snapstate_capture.values import reprs


class Plain:
    pass


class Own:
    def __repr__(self) -> str:
        return "Own()"


def _function() -> None:
    pass


@pytest.fixture
def slow_forgotten():
    before = dict(reprs._SLOW)
    yield
    for cls in list(reprs._SLOW):
        if cls not in before:
            del reprs._SLOW[cls]


@pytest.mark.parametrize("obj", [
    _function, len, [].append, (1).__add__, int.__add__, str.join, dict.fromkeys,
    types.FunctionType.__code__, _function.__code__, Plain, Plain(), type,
], ids=lambda obj: type(obj).__name__)
def test_c_reprs_are_never_taken_for_slow(obj, slow_forgotten):
    # every timed call takes longer than 0 s: only an untimed repr comes back as itself
    assert reprs.safe_repr(obj, 300, slow_seconds=0.0) == repr(obj)
    assert type(obj) not in reprs._SLOW


def test_a_user_repr_is_still_timed(slow_forgotten):
    assert reprs.safe_repr(Own(), 300, slow_seconds=0.0).startswith("<repr failed: SlowRepr")
    assert reprs.safe_repr(Own(), 300, slow_seconds=10.0).startswith("<repr failed: SlowRepr")
