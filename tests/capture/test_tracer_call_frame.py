"""Call tracing keeps each frame's state in a ``CallFrame`` (``tracing/call_frame.py``): the same
steps as before — a call's locals, the locals changed by its return, a caller caught up at its
callee's call — and the line steps a chained tracer's ``line`` events bring, as line tracing
records them."""

from __future__ import annotations

import gc
import sys
import weakref

import snapstate_capture as snap

HERE = __file__


def add(a, b):
    c = a + b
    return [c]


def outer(n):
    items = []
    for i in range(n):
        items.append(i)
        total = add(i, len(items))
    return total


def _add_steps(path, function="add"):
    with snap.open_timeline(path) as timeline:
        return [(s.kind, s.lineno, {k: v.repr for k, v in s.frames[-1].locals.items()},
                 {k: v.repr for k, v in s.extra.items()})
                for s in timeline.runs[-1].steps if s.function == function]


def test_a_chained_tracer_asking_for_lines_gets_them_and_they_are_recorded(snap_path):
    seen = []

    def theirs(frame, event, arg):
        if frame.f_code is add.__code__:
            seen.append(event)
        return theirs

    sys.settrace(theirs)
    try:
        with snap.record(snap_path, trace="calls", include=[HERE]):
            add(1, 2)
        assert sys.gettrace() is theirs
    finally:
        sys.settrace(None)
    assert seen == ["call", "line", "line", "return"]
    base = {"a": "1", "b": "2"}
    assert _add_steps(snap_path) == [
        ("call", add.__code__.co_firstlineno, base, {}),
        ("line", add.__code__.co_firstlineno + 1, base, {}),
        ("line", add.__code__.co_firstlineno + 2, {**base, "c": "3"}, {}),
        ("return", add.__code__.co_firstlineno + 2, {**base, "c": "3"}, {"return": "[3]"})]


def test_each_call_shows_its_caller_caught_up(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        outer(3)
    with snap.open_timeline(snap_path) as timeline:
        calls = [s for s in timeline.runs[-1].steps if s.function == "add" and s.kind == "call"]
        callers = [{k: v.repr for k, v in s.frames[-2].locals.items()} for s in calls]
    assert [c["items"] for c in callers] == ["[0]", "[0, 1]", "[0, 1, 2]"]
    assert [c["i"] for c in callers] == ["0", "1", "2"]
    assert "total" not in callers[0] and callers[2]["total"] == "[3]"


class Thing:
    pass


def make_thing():
    thing = Thing()
    return weakref.ref(thing)


def test_a_traced_frame_keeps_nothing_alive_after_it_returned(snap_path):
    """Capture never changes when the program's objects are freed: a call's state goes with
    its frame (no reference cycle waiting for the cyclic collector)."""
    gc.disable()
    try:
        with snap.record(snap_path, trace="calls", include=[HERE]):
            ref = make_thing()
            alive = ref() is not None
    finally:
        gc.enable()
    assert not alive


SCRIPT = '''
import sys
table = {f"key{i}": [i] for i in range(3000)}
results = []
shared = {"n": 0}

def work(i):
    if i == 3:
        table["key0"][0] = -1  # in place, no change of length
        shared["n"] = 1
    return i * 2

for i in range(5):
    results.append(work(i))
'''


def test_a_script_body_is_caught_up_by_identity_and_length(tmp_path):
    """A module body's catch-up at each call (``CallFrame._rebound``) does not capture its
    unchanged globals again: the 3,000-entry ``table`` is captured once at the body's first
    step and again only at the body's return, which sees the in-place change; a list that
    grows (``results``) is seen at every call."""
    from tests.conftest import run_cli

    script = tmp_path / "loop.py"
    script.write_text(SCRIPT)
    path = tmp_path / "loop.snap"
    done = run_cli("record", "--trace", "calls", "-o", str(path), str(script), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        steps = list(timeline.runs[-1].steps)
        calls = [s for s in steps if s.function == "work" and s.kind == "call"]
        body = [{k: v for k, v in s.frames[0].locals.items()} for s in calls]
        assert [b["results"].repr for b in body] == ["[]", "[0]", "[0, 2]", "[0, 2, 4]",
                                                     "[0, 2, 4, 6]"]
        tables = {b["table"].digest for b in body}
        assert len(tables) == 1  # the catch-up never looked into it again
        end = steps[-1]
        assert (end.kind, end.function) == ("return", "<module>")
        assert end.frames[0].locals["table"].digest not in tables  # key0 changed in place
        assert end.frames[0].locals["shared"].repr == "{'n': 1}"
        assert end.frames[0].locals["results"].repr == "[0, 2, 4, 6, 8]"


def test_an_exception_leaving_a_frame_is_a_raised_step_not_a_return_of_none(snap_path):
    """Python reports a frame left by an exception as a ``return`` event of None: the step is
    labelled ``raised`` and has no return value; a real ``return None`` keeps its value."""
    from tests.programs import unwinding

    with snap.record(snap_path, trace="calls", include=[unwinding.__file__]):
        unwinding.catches()
    with snap.open_timeline(snap_path) as timeline:
        steps = [(s.kind, s.function, s.label, {k: v.repr for k, v in s.extra.items()})
                 for s in timeline.runs[-1].steps if s.kind in ("return", "exception")]
    assert steps[:4] == [
        ("exception", "divide", "ZeroDivisionError",
         {"exception": "ZeroDivisionError('division by zero')"}),
        ("return", "divide", "raised", {}),
        ("exception", "catches", "ZeroDivisionError",
         {"exception": "ZeroDivisionError('division by zero')"}),
        ("return", "catches", None, {"return": "None"})]


def noop():
    return None


def deletes(probe):
    kept = Thing()
    probe.append(weakref.ref(kept))
    noop()
    del kept
    noop()
    probe.append(probe[0]() is None)  # let go of by its del, not at the frame's end
    return 1


def test_a_deleted_local_leaves_the_stack_and_is_let_go_of(snap_path):
    """Call tracing stores a deleted name as deleted at the frame's next step and lets its
    object go (it kept showing the name and holding the object until the frame ended)."""
    probe = []
    gc.disable()
    try:
        with snap.record(snap_path, trace="calls", include=[HERE]):
            deletes(probe)
    finally:
        gc.enable()
    assert probe[1] is True
    with snap.open_timeline(snap_path) as timeline:
        callers = [sorted(s.frames[-2].locals) for s in timeline.runs[-1].steps
                   if s.function == "noop" and s.kind == "call"]
    assert callers == [["kept", "probe"], ["probe"]]
