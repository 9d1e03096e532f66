"""`record(trace=..., include=..., exclude=...)` from code: steps, locals, chaining to a previous
tracer, restoring it, reinstalling a tracer Python dropped, and the reader's view of traced
steps."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import snapstate_capture as snap
from tests.hostile import as_stranger

HERE = __file__


def add(a, b):
    c = a + b
    return c


def accumulate(n):
    items = []
    total = 0
    for i in range(n):
        total = add(total, i)
        items.append(total)
    return items


def _steps(path):
    timeline = snap.open_timeline(path)
    return timeline, list(timeline.runs[-1].steps)


def test_lines_mode_records_locals_at_each_line(snap_path):
    with as_stranger(snap_path.parent), snap.record(snap_path, trace="lines", include=[HERE]):
        result = accumulate(3)
    assert result == [0, 1, 3]
    timeline, steps = _steps(snap_path)
    with timeline:
        assert timeline.runs[-1].status == "finished"
        assert [s.index for s in steps] == list(range(len(steps)))
        mine = [s for s in steps if s.function == "accumulate"]
        assert mine[0].kind == "call" and mine[0].frames[-1].locals["n"].repr == "3"
        assert mine[-1].kind == "return" and mine[-1].extra["return"].repr == "[0, 1, 3]"
        seen_items = [s.frames[-1].locals["items"].repr for s in mine
                      if "items" in s.frames[-1].locals]
        assert "[0, 1]" in seen_items  # mutated in place by .append: re-captured
        inner = next(s for s in steps if s.function == "add" and s.kind == "line")
        assert [f.function for f in inner.frames][-2:] == ["accumulate", "add"]
        caller = inner.frames[-2]
        assert caller.lineno == accumulate.__code__.co_firstlineno + 4
        value = inner.frames[-1].locals["a"]
        assert value.is_inline and value.type_name == "builtins.int"
        with pytest.raises(snap.UntrustedPayloadError):
            value.load()
        assert value.load(trust=True) == 0
        # the same stack read twice gives the same frame keys (referenced, not re-captured)
        again = timeline.runs[-1].steps[inner.index]
        assert [f.key for f in again.frames] == [f.key for f in inner.frames]


def test_calls_mode_records_calls_returns_and_changed_locals(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        accumulate(2)
    timeline, steps = _steps(snap_path)
    with timeline:
        kinds = [(s.kind, s.function) for s in steps]
        assert kinds == [("call", "accumulate"), ("call", "add"), ("return", "add"),
                         ("call", "add"), ("return", "add"), ("return", "accumulate")]
        final = steps[-1].frames[-1].locals
        assert final["total"].repr == "1" and final["items"].repr == "[0, 1]"


def test_calls_mode_shows_callers_as_they_are_at_each_call(snap_path):
    """Call tracing sees no line events, yet a callee's steps show its caller at the calling
    line with the locals it holds then — not frozen as it was at its own call."""
    with snap.record(snap_path, trace="calls", include=[HERE]):
        here = sys._getframe().f_lineno + 1
        accumulate(3)
    timeline, steps = _steps(snap_path)
    with timeline:
        calls = [s for s in steps if s.kind == "call" and s.function == "add"]
        assert len(calls) == 3
        calling_line = accumulate.__code__.co_firstlineno + 4  # total = add(total, i)
        seen = []
        for step in calls:
            caller = step.frames[-2]
            assert caller.function == "accumulate" and caller.lineno == calling_line
            seen.append((caller.locals["i"].repr, caller.locals["total"].repr,
                         caller.locals["items"].repr))
        assert seen == [("0", "0", "[]"), ("1", "0", "[0]"), ("2", "1", "[0, 1]")]
        # the block's own frame is caught up too: at accumulate's call it is at the
        # `accumulate(3)` line, not at the line where recording began
        first = next(s for s in steps if s.kind == "call" and s.function == "accumulate")
        outer = first.frames[-2]
        assert outer.function == "test_calls_mode_shows_callers_as_they_are_at_each_call"
        assert outer.lineno == here


def test_exclude_and_default_include(snap_path, tmp_path, monkeypatch):
    with snap.record(snap_path, trace="calls", include=[HERE], exclude=["*test_tracer_api*"]):
        accumulate(2)
    timeline, steps = _steps(snap_path)
    with timeline:
        assert steps == []
    monkeypatch.chdir(tmp_path)  # this test file is not under the current directory
    other = tmp_path / "b.snap"
    with snap.record(other, trace="calls"):
        accumulate(2)
    timeline, steps = _steps(other)
    with timeline:
        assert steps == []


def test_previous_tracer_is_chained_and_restored(snap_path):
    seen = []

    def theirs(frame, event, arg):
        if frame.f_code is add.__code__:
            seen.append(event)
        return theirs

    sys.settrace(theirs)
    try:
        with snap.record(snap_path, trace="lines", include=[HERE]):
            add(1, 2)
        assert sys.gettrace() is theirs
    finally:
        sys.settrace(None)
    assert seen == ["call", "line", "line", "return"]
    timeline, steps = _steps(snap_path)
    with timeline:
        assert [s.kind for s in steps if s.function == "add"] == ["call", "line", "line",
                                                                  "return"]


def deep(n):
    return deep(n + 1)


def test_tracer_dropped_by_recursion_error_is_reinstalled_with_a_gap(snap_path):
    import gc

    with snap.record(snap_path, trace="calls", include=[HERE]):
        try:
            deep(0)
        except RecursionError:
            pass
        gc.collect()  # the tracer notices at the latest here (often already while unwinding)
        add(1, 2)
    timeline, steps = _steps(snap_path)
    with timeline:
        gaps = [s for s in steps if s.kind == "gap"]
        assert len(gaps) == 1 and gaps[0].thread == "MainThread"
        after = steps[gaps[0].index + 1:]
        assert ("call", "add") in [(s.kind, s.function) for s in after]


class CollectsWhenPickled:
    """Pickling it runs a garbage collection: the tracer is off on purpose meanwhile."""

    def __reduce__(self):
        import gc

        gc.collect()
        return (CollectsWhenPickled, ())


def test_a_collection_while_capture_has_tracing_off_is_no_gap(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        add(1, 2)
        snap.checkpoint("held", value=CollectsWhenPickled())
        add(3, 4)
    timeline, steps = _steps(snap_path)
    with timeline:
        assert [s.kind for s in steps] == ["call", "return", "checkpoint", "call", "return"]


def test_disable_switch(snap_path, monkeypatch):
    monkeypatch.setenv("SNAPSTATE_DISABLE", "1")
    with snap.record(snap_path, trace="lines"):
        accumulate(2)
    assert not snap_path.exists()


def test_checkpoints_share_the_step_sequence(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        add(1, 2)
        index = snap.checkpoint("mark", note="here")
        add(3, 4)
    timeline, steps = _steps(snap_path)
    with timeline:
        assert [s.kind for s in steps] == ["call", "return", "checkpoint", "call", "return"]
        assert index == 2
        assert steps[2].extra["note"].repr == "'here'"


def test_bad_trace_value():
    with pytest.raises(ValueError):
        snap.record("x.snap", trace="everything")


def _holds_secrets():
    api_key = "sk-line-secret-0001"
    counter = 1
    counter += 1
    session_token = "tok-line-secret-0002"
    return counter


@pytest.mark.parametrize("trace", ["lines", "calls"])
def test_traced_steps_redact_secret_names(tmp_path, monkeypatch, trace):
    monkeypatch.chdir(Path(__file__).resolve().parent)  # this file is "user code" by default
    path = tmp_path / "secrets.snap"
    with snap.record(path, trace=trace):
        _holds_secrets()
    seen = {}
    with snap.open_timeline(path) as timeline:
        for step in timeline.runs[-1].steps:
            for frame in step.frames:
                for name in ("api_key", "session_token"):
                    if name in frame.locals:
                        seen.setdefault(name, set()).add(
                            (frame.locals[name].repr, frame.locals[name].is_redacted))
    assert seen == {"api_key": {("<redacted>", True)}, "session_token": {("<redacted>", True)}}
