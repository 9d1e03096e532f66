"""The value diff engine: paths, kinds, pruning and every guard of issue 8 point 1."""

from __future__ import annotations

import time

import numpy as np
import pytest

from snapstate_capture.options import ValueOptions
from snapstate_capture.values.preview import PreviewBuilder
from snapstate_inspect.model.value_diff import (Budget, DiffOptions, diff_objects, diff_previews,
                                                objects_equal)

PREVIEW = PreviewBuilder(ValueOptions())


def _both(a, b, **options):
    """Diff ``a`` and ``b`` as previews and as loaded objects; both results as change tuples."""
    opts = DiffOptions(**options)
    found = []
    for result in (diff_previews(PREVIEW.build(a), PREVIEW.build(b), options=opts),
                   diff_objects(a, b, options=opts)):
        found.append({(c.path, c.kind, c.old, c.new) for c in result.changes})
    return found


def test_nested_change_has_a_path_and_old_new():
    a = {"plan": [{"id": i, "status": "todo"} for i in range(5)], "counter": 1}
    b = {"plan": [{"id": i, "status": "done" if i == 3 else "todo"} for i in range(5)],
         "counter": 2}
    for changes in _both(a, b):
        assert changes == {("['plan'][3]['status']", "changed", "'todo'", "'done'"),
                           ("['counter']", "changed", "1", "2")}


def test_added_removed_keys_and_type_change():
    a = {"keep": 1, "gone": "x", "n": 1}
    b = {"keep": 1, "new": [1, 2], "n": "1"}
    for changes in _both(a, b):
        assert ("['gone']", "removed", "'x'", None) in changes
        assert ("['new']", "added", None, "[1, 2]") in changes
        assert ("['n']", "type", "1", "'1'") in changes
        assert len(changes) == 3
    result = diff_previews(PREVIEW.build(a), PREVIEW.build(b))
    typed = [c for c in result.changes if c.kind == "type"][0]
    assert (typed.old_type, typed.new_type) == ("builtins.int", "builtins.str")
    from snapstate_inspect.diff_text import change_text

    assert change_text(typed).plain == "type int → str (1 → '1')"


def test_equal_values_give_no_changes():
    value = {"a": [1, 2, {"b": (3, 4)}], "s": {1, 2}}
    for changes in _both(value, {"a": [1, 2, {"b": (3, 4)}], "s": {2, 1}}):
        assert changes == set()


def test_nan_equals_nan():
    a = {"loss": float("nan"), "xs": [1.0, float("nan")]}
    b = {"loss": float("nan"), "xs": [1.0, float("nan")]}
    assert objects_equal(a, b)
    assert _both(a, b) == [set(), set()]
    changed = _both(a, {"loss": 0.5, "xs": [1.0, float("nan")]})
    for changes in changed:
        assert changes == {("['loss']", "changed", "nan", "0.5")}


def test_numpy_arrays_compare_and_report_indices():
    a = {"w": np.array([[1.0, np.nan], [3.0, 4.0]])}
    same = {"w": np.array([[1.0, np.nan], [3.0, 4.0]])}
    other = {"w": np.array([[1.0, np.nan], [3.0, 5.0]])}
    assert objects_equal(a, same)
    assert not objects_equal(a, other)
    assert diff_objects(a, same).changes == []
    changes = diff_objects(a, other).changes
    assert [(c.path, c.old, c.new) for c in changes] == [("['w'][1][1]", "4.0", "5.0")]
    big_a, big_b = np.arange(1_000_000, dtype=float), np.arange(1_000_000, dtype=float)
    big_b[123_456] = -1
    assert [c.path for c in diff_objects(big_a, big_b).changes] == ["[123456]"]
    shape = diff_objects(np.zeros(3), np.zeros(4)).changes
    assert len(shape) == 1 and shape[0].kind == "changed"


class Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Unhashable) and self.value == other.value


def test_unhashable_items_in_lists_and_insertions():
    a = [{"k": i} for i in range(300)] + [[1, 2], Unhashable(1)]
    b = [{"k": i} for i in range(300)] + [[1, 2], Unhashable(2)]
    changes = diff_objects(a, b).changes
    assert [(c.path, c.old, c.new) for c in changes] == [("[301].value", "1", "2")]
    inserted = a[:100] + [{"new": [1]}] + a[100:]
    changes = diff_objects(a, inserted).changes
    assert [(c.path, c.kind) for c in changes] == [("[100]", "added")]
    removed = a[:50] + a[51:]
    assert [(c.path, c.kind) for c in diff_objects(a, removed).changes] == [("[50]", "removed")]
    # Small lists go to DeepDiff whole; an insertion is still found as one added item.
    assert [(c.path, c.kind) for c in diff_objects([[1], [2], [3]], [[1], [9], [2], [3]])
            .changes] == [("[1]", "added")]


def test_append_to_a_long_list_is_one_added_item():
    a = [{"role": "user", "content": "x" * 500} for _ in range(1200)]
    b = a + [{"role": "assistant", "content": "hi"}]
    changes = diff_objects(a, b).changes
    assert [(c.path, c.kind) for c in changes] == [("[1200]", "added")]


def test_sets_compare_without_order_in_previews_and_objects():
    a, b = {"x", "y", "z"}, {"y", "z", "w"}
    for changes in _both(a, b):
        assert changes == {("{'x'}", "removed", "'x'", None), ("{'w'}", "added", None, "'w'")}


def test_object_attributes_and_memory_addresses():
    class Session:
        def __init__(self, reply):
            self.reply = reply
            self.handle = object()

    a, b = Session("hello"), Session("bye")
    result = diff_previews(PREVIEW.build(a), PREVIEW.build(b))
    # `handle` reprs differ only in their address: not a change.
    assert [(c.path, c.old, c.new) for c in result.changes] == [(".reply", "'hello'", "'bye'")]
    assert [c.path for c in diff_objects(a, b).changes] == [".reply"]


def test_preview_that_shows_part_of_a_value_says_so():
    a = list(range(200))
    b = list(range(201))
    result = diff_previews(PREVIEW.build(a), PREVIEW.build(b))
    assert [(c.path, c.kind, c.old, c.new) for c in result.changes] == [("", "len", "200", "201")]
    assert any("--full" in note for note in result.notes)


def test_long_strings_whose_previews_show_the_same_text_say_what_differs():
    """Two long strings alike in their first 200 characters: their previews' texts are the
    same, so the change is their lengths (or, of the same length, that they differ past the
    text shown), never ``'…' → '…'`` with the same text on both sides."""
    head = "# Title\n\nSome *emph* and **strong** text.\n" * 10
    longer = diff_previews(PREVIEW.build(head + "a"), PREVIEW.build(head + "ab"))
    assert [(c.path, c.kind, c.old, c.new) for c in longer.changes] == [
        ("", "len", str(len(head) + 1), str(len(head) + 2))]
    assert any("--full" in note for note in longer.notes)
    same_length = diff_previews(PREVIEW.build(head + "a"), PREVIEW.build(head + "b"))
    assert [c.kind for c in same_length.changes] == ["hidden"]
    loaded = diff_objects(head + "a", head + "ab")  # loaded: both ends shown, they differ
    assert [(c.kind, c.old != c.new) for c in loaded.changes] == [("changed", True)]


def test_long_strings_are_compared_directly_with_the_offset():
    a = "line\n" * 100_000
    b = a[:250_000] + "X" + a[250_001:]
    start = time.monotonic()
    result = diff_objects(a, b)
    assert time.monotonic() - start < 10  # difflib over 100,000 lines would take minutes
    assert [c.kind for c in result.changes] == ["changed"]
    assert len(result.changes[0].old) <= DiffOptions().max_repr
    assert any("offset 250000" in note for note in result.notes)


def test_time_limit_gives_a_partial_diff_with_a_note():
    a = {f"k{i}": [j for j in range(50)] for i in range(20_000)}
    b = {f"k{i}": [j + 1 for j in range(50)] for i in range(20_000)}
    options = DiffOptions(time_limit=0.2, max_changes=10**9)
    start = time.monotonic()
    result = diff_objects(a, b, options=options)
    assert time.monotonic() - start < 10
    assert result.partial
    assert any("partial diff: time limit" in note for note in result.notes)
    assert 0 < len(result.changes) < 20_000 * 50


def test_deepdiff_alone_is_stopped_by_the_deadline():
    # A small container (handed to DeepDiff whole) holding a lot of work.
    a = [[list(range(100)) for _ in range(5_000)]]
    b = [[list(range(1, 101)) for _ in range(5_000)]]
    options = DiffOptions(time_limit=0.2, max_changes=10**9, small=10**9)
    start = time.monotonic()
    result = diff_objects(a, b, options=options)
    # Unbounded, this diff takes tens of seconds; generous bound for a loaded CI machine.
    assert time.monotonic() - start < 10
    assert result.partial and any("time limit" in note for note in result.notes)


def test_change_cap_gives_a_partial_diff():
    a = {i: i for i in range(5_000)}
    b = {i: -i for i in range(5_000)}
    result = diff_objects(a, b, options=DiffOptions(max_changes=25))
    assert len(result.changes) == 25 and result.partial
    assert any("25 changes" in note for note in result.notes)


class BadIter(list):
    def __iter__(self):
        raise RuntimeError("iter boom")


def test_deepdiff_failure_falls_back_to_reprs_and_says_so():
    result = diff_objects({"x": BadIter([1])}, {"x": BadIter([2])})
    assert [(c.path, c.kind) for c in result.changes] == [("", "changed")]
    assert result.changes[0].old == "{'x': [1]}"
    assert any("deepdiff failed (RuntimeError: iter boom); compared reprs" in note
               for note in result.notes)


class RaisingEq:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        raise ValueError("no comparing me")

    __hash__ = None  # type: ignore[assignment]


def test_raising_eq_does_not_escape():
    assert not objects_equal(RaisingEq(1), RaisingEq(1))
    changes = diff_objects([RaisingEq(1)] * 3, [RaisingEq(1), RaisingEq(2), RaisingEq(1)]).changes
    assert [(c.path, c.old, c.new) for c in changes] == [("[1].value", "1", "2")]


def test_malformed_previews_do_not_raise():
    result = diff_previews({"type": "x", "children": "nonsense"}, {"repr": "y"})
    assert result.changes
    assert diff_previews({"children": [["[0]", 5]]}, {"children": []}) is not None


@pytest.mark.parametrize("limit", [0.0])
def test_expired_budget_compares_nothing(limit):
    budget = Budget(limit)
    time.sleep(0.01)
    result = diff_objects({"a": 1}, {"a": 2}, budget=budget)
    assert result.partial and result.changes == []
