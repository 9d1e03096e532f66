"""Call tracing checks an object met again at a call step or a caller's catch-up by its shallow
form (``tracing/shallow.py``), and every local in full at the frame's own return: a change one
level down is seen at once, a deeper one at the latest at the return of a frame holding it."""

from __future__ import annotations

import ast
import gc
import weakref

import snapstate_capture as snap
from snapstate_capture.tracing.shallow import ShallowForms

shallow_form = ShallowForms().form

HERE = __file__


class Node:
    def __init__(self, name, children=None):
        self.name = name
        self.children = children if children is not None else []
        self.meta = {"seen": 0}


class Reduced:
    def __init__(self):
        self.x = 1

    def __reduce__(self):
        return (Reduced, ())


class Scope(dict):
    pass


def test_a_shallow_form_changes_with_a_rebinding_a_scalar_or_a_length_one_level_down():
    node = Node("a", [Node("b")])
    form = shallow_form(node)
    assert form is not None and shallow_form(node) == form
    node.name = "c"
    assert shallow_form(node) != form
    form = shallow_form(node)
    node.children.append(Node("d"))
    assert shallow_form(node) != form
    form = shallow_form(node)
    node.meta = {"seen": 0}  # an equal dict, another object
    assert shallow_form(node) != form


def test_a_shallow_form_does_not_see_two_levels_down_nor_a_same_length_edit():
    node = Node("a", [Node("b")])
    form = shallow_form(node)
    node.children[0].name = "changed"
    node.meta["seen"] = 1
    assert shallow_form(node) == form  # the frame's return step stores these (test below)


def test_dict_subclasses_and_ast_nodes_have_forms_builtins_functions_classes_do_not():
    scope = Scope(a=Node("a"))
    form = shallow_form(scope)
    scope["b"] = Node("b")
    assert form is not None and shallow_form(scope) != form
    assert shallow_form(ast.parse("x = 1").body[0]) is not None
    for value in ({"a": 1}, [1], (1,), "text", 3, len, Node, lambda: 1, Node("a").__init__,
                  Reduced()):
        assert shallow_form(value) is None, value


def visit(node, depth):
    """A recursive walk, as a linter's visitor is: each call gets a node its caller holds."""
    seen = node.name
    for child in node.children:
        visit(child, depth + 1)
    return seen


def rename_deep(root):
    root.children[0].children[0].name = "renamed"
    touch(root)
    return root


def touch(root):
    return root.name


def _steps(path, function):
    with snap.open_timeline(path) as timeline:
        return [(s.kind, s.frames[-1].locals["root"].load(trust=True))
                for s in timeline.runs[-1].steps if s.function == function]


def test_a_change_two_levels_down_is_stored_at_the_return_of_the_frame_holding_it(snap_path):
    root = Node("r", [Node("c", [Node("g")])])
    with snap.record(snap_path, trace="calls", include=[HERE]):
        rename_deep(root)
    steps = _steps(snap_path, "rename_deep")
    assert [kind for kind, _ in steps] == ["call", "return"]
    assert steps[0][1].children[0].children[0].name == "g"
    assert steps[-1][1].children[0].children[0].name == "renamed"  # checked in full
    touched = _steps(snap_path, "touch")
    assert touched[-1][1].children[0].children[0].name == "renamed"  # touch's own return


def test_a_walk_records_the_same_nodes_as_before_and_replays(snap_path):
    tree = Node("r", [Node(f"c{i}", [Node(f"g{i}{j}") for j in range(3)]) for i in range(4)])
    with snap.record(snap_path, trace="calls", include=[HERE]):
        visit(tree, 0)
    with snap.open_timeline(snap_path) as timeline:
        steps = [s for s in timeline.runs[-1].steps if s.function == "visit"]
        names = [s.frames[-1].locals["node"].load(trust=True).name for s in steps
                 if s.kind == "call"]
    assert names == ["r"] + [n for i in range(4) for n in (f"c{i}", *(f"g{i}{j}"
                                                                   for j in range(3)))]


def hold(thing):
    return thing.name


def use_twice():
    thing = Node("t")
    hold(thing)
    hold(thing)  # met again: taken from its shallow form
    return weakref.ref(thing)


def test_no_object_is_kept_alive_by_the_shallow_checks(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        gone = use_twice()
        gc.collect()
        assert gone() is None


def peek():
    return None


def edit_caller_state():
    scores = [1, 2, 3]
    table = {"a": [1]}
    peek()
    scores[0] = 99  # the same length, another item: seen at the next catch-up
    table["a"].append(2)  # inside an item: seen at this frame's return
    peek()
    return len(scores)


def test_a_callers_containers_are_caught_up_by_their_items_and_checked_in_full_at_return(
        snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        edit_caller_state()
    with snap.open_timeline(snap_path) as timeline:
        steps = list(timeline.runs[-1].steps)
        peeks = [s for s in steps if s.function == "peek" and s.kind == "call"]
        callers = [{k: v.repr for k, v in s.frames[-2].locals.items()} for s in peeks]
        back = [s for s in steps if s.function == "edit_caller_state" and s.kind == "return"][0]
        final = {k: v.repr for k, v in back.frames[-1].locals.items()}
    assert [c["scores"] for c in callers] == ["[1, 2, 3]", "[99, 2, 3]"]
    assert callers[1]["table"] == "{'a': [1]}"
    assert final["table"] == "{'a': [1, 2]}" and final["scores"] == "[99, 2, 3]"


def test_a_long_text_handed_down_is_the_same_value_in_every_frame(snap_path):
    text = "word " * 500

    def inner(t):
        return len(t)

    def outer(t):
        return inner(t) + inner(t)

    with snap.record(snap_path, trace="calls", include=[HERE]):
        outer(text)
    with snap.open_timeline(snap_path) as timeline:
        values = [v for s in timeline.runs[-1].steps for f in s.frames
                  for n, v in f.locals.items() if n == "t"]
        assert values and {v.digest for v in values} == {values[0].digest}
        assert values[0].load(trust=True) == text
