"""Big objects at traced steps are stored bounded (``tracing/bounded.py``): a one-level preview
marked ``bounded``, no payload, the same in every process — so they cost the same at every
step however big they grow, replay without divergence, and a change to one of their
attributes is still reported at the step it happens."""

from __future__ import annotations

import gc
import json
import shutil
import textwrap

import pytest

from snapstate_capture.options import ValueOptions
from snapstate_capture.replay.traced import recorded_probe_limit
from snapstate_capture.tracing.big_values import (_LEAVES, BOUNDED_NOTE, FIRST_PROBE_LIMIT,
                                                  PROBE_LIMIT, REF_LIMIT, BigValues,
                                                  bounded_note, reach)
from snapstate_capture.tracing.bounded import bounded_preview, shallow_key

import snapstate_capture as snap
from tests.conftest import PROGRAMS, run_cli, run_python
from tests.e2e.replay_helpers import replay_json


class Holder:
    def __init__(self, items):
        self.items = items
        self.count = len(items)
        self.api_key = "hunter2"


def test_reach_counts_objects_not_scalars_and_stops_at_the_limit():
    small = Holder([[i] for i in range(10)])
    # the list and its ten lists (and the instance dict where Python makes one); strings and
    # ints are not counted
    assert reach(small) in (11, 12)
    assert reach(Holder(list(range(REF_LIMIT // 2)))) in (1, 2)
    assert reach(Holder([[i] for i in range(PROBE_LIMIT + 5)])) is None


class Scope(dict):
    pass


def _depth_first(obj, limit=PROBE_LIMIT, big=()):
    """``reach`` as it was written before it walked by levels."""
    seen, todo, count = {id(obj)}, [obj], 0
    while todo:
        for child in gc.get_referents(todo.pop()):
            cls = type(child)
            if cls in _LEAVES or isinstance(child, type):
                continue
            if cls in big:
                return None
            if id(child) in seen:
                continue
            seen.add(id(child))
            count += 1
            if count > limit:
                return None
            todo.append(child)
    return count


def test_reach_by_levels_counts_as_depth_first():
    """``reach`` walks level by level; its answer is the one a depth-first walk gives (the
    count of everything reachable, or None past the limit or at a big class's instance)."""
    shared = [1, 2]
    cycle: list = []
    cycle.append(cycle)
    holder = Holder.__new__(Holder)
    holder.__dict__.update(a=shared, b=[shared, (shared, "x")], c=cycle)
    deep = [[[[Scope()]]]]
    shapes = [shared, holder, cycle, deep, {"k": [holder, holder]}, [[i] for i in range(299)],
              [[i] for i in range(300)], [[i] for i in range(301)],
              Holder([[i] for i in range(PROBE_LIMIT)]), ((),), "text"]
    for shape in shapes:
        for big in ((), {Scope}, {Holder}):
            assert reach(shape, PROBE_LIMIT, big) == _depth_first(shape, PROBE_LIMIT, big), \
                (shape, big)


def test_big_values_are_judged_by_reach_then_by_class():
    big = BigValues(ValueOptions())
    assert not big.is_big(Holder([]))
    for _ in range(3):
        assert big.is_big(Holder([[i] for i in range(PROBE_LIMIT)]))
    assert big.is_big(Holder([]))  # three big instances: the class is taken as big
    assert big.is_big([[i] for i in range(PROBE_LIMIT + 1)])
    assert not big.is_big([[1]])  # builtin containers are counted every time


def test_modules_functions_and_classes_are_never_big():
    """Those pickle names are captured by reference and compared by name: ``sys`` reaches sys.path and
    sys.modules (thousands of objects, different in a replay child), yet a module frame that
    imports it must replay (mistune traced by lines diverged at ``import sys``)."""
    import sys
    import types

    from snapstate_capture.tracing.big_values import reach

    assert reach(sys, PROBE_LIMIT) is None  # it does reach more than the limit
    big = BigValues(ValueOptions())
    for value in (sys, json, json.dumps, Holder, Holder):
        assert not big.is_big(value), value
    # a class pickle cannot name is written by dill with its namespace: weighed by it
    made = types.new_class("Made", exec_body=lambda ns: ns.update({"a": [1]}))
    assert not big.is_big(made)


def test_a_method_bound_to_a_big_object_is_big():
    """Its pickle holds the object: pyflakes returns its Checker's bound handlers thousands of
    times, and capturing each in full pickled the Checker each time."""
    import sys

    big = BigValues(ValueOptions())
    holder = Holder([[i] for i in range(PROBE_LIMIT)])
    assert big.is_big(holder.__init__)
    assert big.is_big(holder.items.append)
    assert not big.is_big(Holder([]).__init__)
    assert not big.is_big(sys.getrecursionlimit)  # bound to a module: by reference
    assert not big.is_big(dict.fromkeys)  # bound to a class: by reference
    world = [[i] for i in range(PROBE_LIMIT)]
    assert big.is_big(lambda: world)  # a closure holding a big list
    assert not big.is_big(test_a_method_bound_to_a_big_object_is_big)  # importable by name


def test_what_a_function_or_method_inside_a_value_is_written_with_is_counted():
    """A lambda kept in an object is pickled with its closure: more-itertools' ``callback_iter``
    holds one whose closure holds a unittest ``TestCase`` (and through it pytest's session);
    counted as a leaf, the object looked small and was captured in full at every call (~2 s).
    A bound method is pickled with its instance; an importable function by reference."""
    world = [[i] for i in range(PROBE_LIMIT)]
    big = BigValues(ValueOptions())
    assert big.is_big({"callback": lambda: world})  # closure
    assert big.is_big({"callback": lambda items=world: items})  # default
    assert big.is_big([Holder(world).__init__])  # a bound method's instance
    assert not big.is_big({"callback": lambda: 1})
    assert not big.is_big([test_a_method_bound_to_a_big_object_is_big, json.dumps])


def test_an_object_holding_many_numbers_is_big_though_it_is_few_objects():
    """more-itertools' ``peekable`` drained item by item: its deque of 20,000 ints was pickled
    and hashed whole at each of 20,005 calls (minutes); over ``REF_LIMIT`` references it is
    bounded, and its bounded preview follows the deque's length at each step."""
    import collections

    big = BigValues(ValueOptions())
    assert not big.is_big(Holder(collections.deque(range(REF_LIMIT // 2))))
    assert big.is_big(Holder(collections.deque(range(REF_LIMIT + 1))))
    assert reach([list(range(REF_LIMIT))]) is None
    assert reach([list(range(100))]) == 1


class Sly:
    """An object whose ``__class__`` is a property: ``isinstance`` would run it."""

    calls: list[str] = []

    @property
    def __class__(self):  # noqa: D401 - the program's own code, which capture must not run
        Sly.calls.append("ran")
        return list


def test_counting_never_runs_a_class_property():
    Sly.calls.clear()
    assert reach([Sly(), [Sly()]]) == 3
    assert not BigValues(ValueOptions()).is_big(Sly())
    assert Sly.calls == []


def test_a_count_stops_at_an_instance_of_a_class_taken_as_big():
    big = BigValues(ValueOptions())
    small = Holder([])
    assert not big.is_big([small, [1]])
    for _ in range(3):
        assert big.is_big(Holder([[i] for i in range(PROBE_LIMIT)]))
    # Holder is taken as big now: whatever reaches one is big, without counting the rest
    assert reach([[1], small], big={Holder}) is None
    assert big.is_big([small, [1]])
    assert big.is_big({"deep": [[small]]})
    assert not big.is_big([[1], (2, [3])])


def test_a_bounded_preview_is_one_level_without_addresses_or_secrets():
    value = Holder([[i] for i in range(PROBE_LIMIT)])
    preview = bounded_preview(value, ValueOptions(max_depth=1))
    assert preview["bounded"] == BOUNDED_NOTE
    assert preview["repr"] == f"<{__name__}.Holder object>"
    kids = dict(preview["children"])
    assert kids[".items"] == {"type": "builtins.list", "len": PROBE_LIMIT,
                              "repr": f"<list of {PROBE_LIMIT} items>", "truncated": True}
    assert kids[".count"]["repr"] == str(PROBE_LIMIT)
    assert kids[".api_key"]["redacted"] is True
    key = shallow_key(value, 50)
    value.items.append([1])
    assert shallow_key(value, 50) != key  # its length is part of what it shows
    value.items[0] = [2]
    assert shallow_key(value, 50) == shallow_key(value, 50)


def _record(workdir, *args):
    out = workdir / "big.snap"
    done = run_cli("record", "--trace", "calls", "--include", "*/big_self.py", "-o", str(out),
                   str(workdir / "big_self.py"), *args, cwd=workdir)
    assert done.returncode == 0, done.stderr
    return out


def test_a_traced_big_self_replays_and_a_change_in_it_is_found(tmp_path):
    shutil.copy(PROGRAMS / "big_self.py", tmp_path)
    path = _record(tmp_path, "700")
    with snap.open_timeline(path) as timeline:
        selves = [(s.index, s.kind, s.function, f.locals["self"]) for s in timeline.runs[-1].steps
                  for f in s.frames[-1:] if "self" in f.locals]
        previews = [(index, kind, function, value.preview, value.has_payload)
                    for index, kind, function, value in selves]
    visits = [p for p in previews if p[1] == "call" and p[2] == "Visitor.visit"]
    assert len(visits) >= 700
    preview, has_payload = visits[60][3:]
    assert preview["bounded"] == BOUNDED_NOTE and not has_payload
    counts = [dict(p[3]["children"])[".visited"]["repr"] for p in visits]
    assert counts[:3] == ["0", "1", "2"]  # a scalar attribute is seen at every step
    assert "sk-" not in str(preview)
    _, data = replay_json(path)
    assert data["status"] == "ok", data["message"]
    first_changed = next(p[0] for p in previews if p[2] == "Visitor.visit"
                         and dict(p[3]["children"])[".visited"]["repr"] == "41")
    # the change: nothing in the code or in any local, only in the bounded object's state
    result = run_cli("replay", str(path), "--trust", "--json", env={"BIG_SELF_BUMP": "40"},
                     timeout=120)
    data = json.loads(result.stdout[result.stdout.find("{\n"):])
    assert data["status"] == "divergence", data["message"]
    assert data["divergence"]["step"] == first_changed


class Shown:
    """Big, with a repr of its own that shows what no attribute shows."""

    calls = 0
    mood = "calm"

    def __init__(self):
        self.world = [[i] for i in range(PROBE_LIMIT)]
        self.count = 0

    def __repr__(self):
        Shown.calls += 1
        return f"<Shown {Shown.mood} at {hex(id(self))}>"


def test_a_bounded_object_with_its_own_repr_is_keyed_by_that_repr_called_once():
    """Its repr is part of its key (a bound method, a function: pyflakes returns its Checker's
    handlers thousands of times): an unchanged one costs no preview, a changed repr shows,
    and the repr runs once a capture, as when the preview was built every time."""
    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.store.trace_items import BLOB
    from snapstate_capture.tracing.value_encoder import ValueEncoder

    items: list = []
    encoder = ValueEncoder(CaptureOptions(), items.append)
    shown = Shown()
    first = encoder.capture(shown, "self")
    assert first[1] is None and Shown.calls == 1
    assert encoder.capture(shown, "self") == first and Shown.calls == 2
    assert not any(item[0] == BLOB for item in items[1:])  # built once
    Shown.mood = "cross"  # nothing the attributes show: only the repr tells
    second = encoder.capture(shown, "self")
    assert second != first and Shown.calls == 3
    blobs = {item[1]: item[2] for item in items if item[0] == BLOB}
    preview = json.loads(blobs[second[0]])
    assert preview == bounded_preview(shown, ValueOptions(max_depth=1))  # the long way
    assert preview["repr"] == "<Shown cross at 0x…>"
    shown.count = 1
    assert encoder.capture(shown, "self") not in (first, second)
    method = shown.__repr__
    assert encoder.capture(method, "handler") == encoder.capture(shown.__repr__, "handler")


def move_one(lists):
    """boltons' BarrelList moves items between its inner lists: a little change at each call."""
    lists[0].insert(0, lists[-1].pop())


def test_a_big_list_of_plain_data_is_bounded_at_traced_steps_and_its_changes_show(tmp_path):
    """Plain data is copied with marshal, which a list of 100,000 ints passes: it was hashed,
    sent and captured whole at every call (0.5 MB a call; 2.4 GB for one passing boltons
    test). Over ``MARSHAL_BYTES`` it is bounded as a big object is."""
    from snapstate_capture.tracing.value_encoder import MARSHAL_BYTES

    lists = [list(range(i * 12_500, (i + 1) * 12_500)) for i in range(8)]
    assert len(__import__("marshal").dumps(lists)) > MARSHAL_BYTES
    path = tmp_path / "barrel.snap"
    with snap.record(path, trace="calls", include=[__file__]):
        for _ in range(3):
            move_one(lists)
    with snap.open_timeline(path) as timeline:
        shown = [(value.preview, value.has_payload) for value in (
            step.frames[-1].locals["lists"] for step in timeline.runs[-1].steps
            if step.function == "move_one" and step.kind == "call")]
    assert len(shown) == 3
    assert all(preview.get("bounded") == BOUNDED_NOTE and not payload
               for preview, payload in shown)
    # one level: the inner lists' lengths, which the calls change
    lengths = [[kid["len"] for _, kid in preview["children"]] for preview, _ in shown]
    assert lengths[0][0] == 12_500 and lengths[1][0] == 12_501 and lengths[2][-1] == 12_498


def drains(lists):
    """A caller holding a big list across its callees' calls: its catch-up at each call."""
    for _ in range(3):
        move_one(lists)


def test_a_value_bounded_at_a_frames_last_step_is_bounded_again_without_being_copied(
        tmp_path, monkeypatch):
    from snapstate_capture.tracing import value_encoder

    copied = []
    real = value_encoder.ValueEncoder._capture
    monkeypatch.setattr(value_encoder.ValueEncoder, "_capture", lambda self, value, name: (
        copied.append(name) or real(self, value, name)))
    lists = [list(range(i * 12_500, (i + 1) * 12_500)) for i in range(8)]
    path = tmp_path / "drains.snap"
    with snap.record(path, trace="calls", include=[__file__]):
        drains(lists)
    # the first capture in this test's frame and in the caller, and each callee's own (a new
    # frame each): none of the frames' catch-ups at the later calls (9 before)
    assert copied.count("lists") == 5
    with snap.open_timeline(path) as timeline:
        shown = [step.frames[-2].locals["lists"].preview for step in timeline.runs[-1].steps
                 if step.function == "move_one" and step.kind == "call"]
    assert all(preview.get("bounded") == BOUNDED_NOTE for preview in shown)
    assert [dict(preview["children"])["[0]"]["len"] for preview in shown] == \
        [12_500, 12_501, 12_502]


def test_the_bounded_note_is_the_text_older_runs_stored():
    """The note is part of every bounded preview and so of its key: replaying an older traced
    run whose values were bounded compares the previews it makes with the stored ones."""
    assert bounded_note(FIRST_PROBE_LIMIT) == \
        "over 300 objects: one level kept at traced steps, no payload"
    assert BOUNDED_NOTE == bounded_note(PROBE_LIMIT) == \
        "over 64 objects: one level kept at traced steps, no payload"
    assert recorded_probe_limit({}) == FIRST_PROBE_LIMIT  # a run recorded before 2026-12-07
    assert recorded_probe_limit({"probe_limit": 64}) == 64


TREE = textwrap.dedent("""
    class Token:
        def __init__(self, value, parent=None):
            self.value, self.parent, self.children = value, parent, []

    def tree(size):
        root = Token("root")
        for i in range(size):
            root.children.append(Token(f"t{i}", root))
        return root

    def rename(token, i):
        token.value = f"renamed {i}"
        return len(token.parent.children)

    root = tree(60)
    for i in range(20):
        rename(root.children[i], i)
    print(root.children[0].value)
""")


@pytest.mark.parametrize("limit", [PROBE_LIMIT, FIRST_PROBE_LIMIT])
def test_a_tree_of_sixty_tokens_replays_with_the_limit_it_was_recorded_with(tmp_path, limit):
    """A token whose ``parent`` reaches a tree of ~180 objects (sqlparse's shape) is bounded at
    traced steps under the default limit, and captured whole under the limit of runs
    recorded before 2026-12-07; each run replays with its own (``entry["probe_limit"]``)."""
    script, path = tmp_path / "tree.py", tmp_path / "tree.snap"
    script.write_text(TREE)
    program = textwrap.dedent(f"""
        import runpy, sys
        import snapstate_capture as snap
        from snapstate_capture.options import CaptureOptions
        with snap.record(sys.argv[1], trace="calls", options=CaptureOptions(probe_limit={limit})):
            runpy.run_path({str(script)!r}, run_name="__main__")
    """)
    runner = tmp_path / "runner.py"
    runner.write_text(program)
    done = run_python(str(runner), str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        assert run.entry["probe_limit"] == limit
        token = next(s for s in run.steps if s.function == "rename").frames[-1].locals["token"]
        assert (token.preview.get("bounded") == bounded_note(limit)) == (limit == PROBE_LIMIT)
    replayed = run_cli("replay", str(path), cwd=tmp_path, timeout=120)
    assert replayed.returncode == 0 and "no divergence" in replayed.stdout, replayed.stdout
