"""Capture reads its own clocks, never the program's (``snapstate_capture/clocks.py``).

A test suite that mocks ``time.monotonic`` with a ``side_effect`` list, or freezes time with
freezegun's ``auto_tick_seconds``, saw SnapState's reads: python-dateutil's suite runs under
freezegun, and a recorded program that read the clock twice around a call got ``StopIteration``
from its mock, or 13 s where it waited 1 s."""

from __future__ import annotations

import importlib.util
import itertools
import time
from unittest import mock

import pytest

import snapstate_capture as snap
from snapstate_capture import clocks

HERE = __file__


def helper(i):
    return i * 2


def timed_work():
    """What a program under test does: read the clock, make calls, read it again."""
    start = time.monotonic()
    wall = time.time()
    began = time.perf_counter()
    for i in range(3):
        helper(i)
        snap.checkpoint("loop", i=i)
    return (time.monotonic() - start, time.time() - wall, time.perf_counter() - began)


@pytest.mark.parametrize("trace", [None, "calls", "lines"])
def test_a_mocked_clock_sees_only_the_programs_calls(tmp_path, trace):
    with mock.patch("time.monotonic", side_effect=[10.0, 12.5]) as mono, \
            mock.patch("time.time", side_effect=[100.0, 101.0]) as wall, \
            mock.patch("time.perf_counter", side_effect=[1.0, 1.5]) as perf:
        with snap.record(tmp_path / "t.snap", trace=trace, include=[HERE]):
            taken = timed_work()
    assert taken == (2.5, 1.0, 0.5)
    assert (mono.call_count, wall.call_count, perf.call_count) == (2, 2, 2)
    with snap.open_timeline(tmp_path / "t.snap") as timeline:
        run = timeline.runs[-1]
        assert run.status == "finished"
        assert [s.label for s in run.steps if s.kind == "checkpoint"] == ["loop"] * 3


def _ticking_clock():
    """A clock that moves one second each time it is read (freezegun's auto_tick_seconds)."""
    ticks = itertools.count()
    return lambda: 1_577_836_800.0 + next(ticks)


@pytest.mark.parametrize("trace", [None, "calls", "lines"])
def test_a_ticking_clock_moves_only_when_the_program_reads_it(tmp_path, trace):
    fake = _ticking_clock()
    with mock.patch("time.time", fake), mock.patch("time.monotonic", fake), \
            mock.patch("time.perf_counter", fake):
        with snap.record(tmp_path / "t.snap", trace=trace, include=[HERE]):
            taken = timed_work()
    assert taken == (3.0, 3.0, 3.0)  # six reads, all the program's: each ends 3 ticks later


def test_clocks_imported_while_patched_are_the_interpreters(monkeypatch):
    """freezegun's scan of module attributes imports ``snapstate_capture``'s lazy modules with
    its fakes already in: the module, loaded then, still reads the real clocks."""
    fake = _ticking_clock()
    for name in ("time", "monotonic", "perf_counter"):
        monkeypatch.setattr(time, name, fake)
    spec = importlib.util.spec_from_file_location("clocks_loaded_under_a_patch", clocks.__file__)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    monkeypatch.undo()
    assert abs(fresh.Clocks.time() - time.time()) < 5
    assert abs(fresh.Clocks.monotonic() - time.monotonic()) < 5
    assert abs(fresh.Clocks.perf_counter() - time.perf_counter()) < 5
