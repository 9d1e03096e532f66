"""Step diff on recorded timelines: frames matched, variables added/removed/changed, hash skip,
full values behind the trust gate."""

from __future__ import annotations

import pytest

import snapstate_capture as snap
from snapstate_inspect.model import diff as diff_model
from snapstate_inspect.model.diff import STEP_VALUES, StepDiffer, match_frames
from snapstate_inspect.model.value_diff import DiffOptions
from tests.hostile import as_stranger


def _record_agent(path):
    def helper(plan):
        scratch = {"k": 1}
        snap.checkpoint("in helper")
        return scratch

    def agent():
        plan = [{"id": i, "status": "todo"} for i in range(5)]
        big = list(range(10_000))
        gone = "temporary"
        snap.checkpoint("start", tag="a")
        plan[3]["status"] = "done"
        del gone
        added = {"x": 1}
        helper(plan)
        snap.checkpoint("end", tag="b")
        return added, big

    with snap.record(path, name="agent"):
        agent()


@pytest.fixture
def timeline(snap_path):
    _record_agent(snap_path)
    with snap.open_timeline(snap_path) as opened:
        yield opened


def _vars(result):
    return {(frame.split(".")[-1], var.name): var for frame, var in result.variables()}


def test_step_diff_reports_added_removed_and_nested_changes(timeline):
    steps = timeline.run().steps
    result = StepDiffer().diff(steps[0], steps[2])
    assert not result.identical
    found = _vars(result)
    assert found[("agent", "gone")].status == "removed"
    assert found[("agent", "gone")].old == ("builtins.str", "'temporary'")
    assert found[("agent", "added")].status == "added"
    plan = found[("agent", "plan")]
    assert plan.status == "changed"
    assert [(c.path, c.kind, c.old, c.new) for c in plan.changes] == [
        ("[3]['status']", "changed", "'todo'", "'done'")]
    assert plan.to_json()["changes"][0]["path"] == "plan[3]['status']"
    # The unchanged 10,000-item list is not reported.
    assert ("agent", "big") not in found
    tag = found[(STEP_VALUES, "tag")]
    assert (tag.old, tag.new) == (("builtins.str", "'a'"), ("builtins.str", "'b'"))


def test_frames_are_matched_by_function_and_position(timeline):
    steps = timeline.run().steps
    inner, outer = steps[1], steps[2]
    assert inner.frames[-1].function.endswith("helper")
    result = StepDiffer().diff(outer, inner)
    statuses = [(f.function.split(".")[-1], f.status) for f in result.frames]
    assert statuses[-2:] == [("agent", "same"), ("helper", "added")]
    agent = result.frames[-2]
    assert (agent.a_index, agent.b_index) == (len(outer.frames) - 1, len(inner.frames) - 2)
    assert agent.a_lineno != agent.b_lineno  # different lines of the same frame
    back = StepDiffer().diff(inner, outer)
    assert [(f.function.split(".")[-1], f.status) for f in back.frames][-1] == ("helper",
                                                                               "removed")


def test_match_frames_pairs_by_name_even_with_a_frame_inserted_in_the_middle():
    class F:
        def __init__(self, function):
            self.function = function

    a = (F("main"), F("run"), F("step"))
    b = (F("main"), F("retry"), F("run"), F("step"))
    pairs = [((x.function if x else None), (y.function if y else None), status)
             for x, y, status in match_frames(a, b)]
    assert pairs == [("main", "main", "same"), (None, "retry", "added"), ("run", "run", "same"),
                     ("step", "step", "same")]


def test_same_step_is_identical_and_equal_hashes_are_never_read(timeline, monkeypatch):
    steps = timeline.run().steps
    calls = []
    real = diff_model.diff_previews

    def counting(a, b, **kwargs):
        calls.append((a.get("type"), b.get("type")))
        return real(a, b, **kwargs)

    monkeypatch.setattr(diff_model, "diff_previews", counting)
    assert StepDiffer().diff(steps[0], steps[0]).identical
    assert calls == []
    StepDiffer().diff(steps[0], steps[2])
    # Only values whose hashes differ are diffed: `plan` (not the unchanged 10,000-item `big`),
    # the `tag` step value; `gone` and `added` exist on one side only.
    assert calls.count(("builtins.list", "builtins.list")) == 1
    assert ("builtins.str", "builtins.str") in calls
    assert ("builtins.dict", "builtins.dict") not in calls


def test_full_values_without_trust_fall_back_to_previews(tmp_path):
    path = tmp_path / "theirs.snap"
    with as_stranger(tmp_path):
        _record_agent(path)
    with snap.open_timeline(path) as timeline:
        steps = timeline.run().steps
        result = StepDiffer(DiffOptions(full_values=True)).diff(steps[0], steps[2])
    plan = _vars(result)[("agent", "plan")]
    assert [c.path for c in plan.changes] == ["[3]['status']"]
    assert any("not signed with your key" in note for note in plan.diff.notes)


def test_full_values_of_ones_own_run_load_without_trust(timeline):
    steps = timeline.run().steps  # recorded here: signed with the key its record created
    result = StepDiffer(DiffOptions(full_values=True)).diff(steps[0], steps[2])
    plan = _vars(result)[("agent", "plan")]
    assert [c.path for c in plan.changes] == ["[3]['status']"]
    assert not any("not signed" in note for note in plan.diff.notes)


def test_full_values_diff_loaded_payloads(snap_path):
    def agent():
        data = {f"k{i}": i for i in range(500)}
        snap.checkpoint("a")
        data["k250"] = -1
        data["k600"] = 1
        snap.checkpoint("b")

    with snap.record(snap_path):
        agent()
    with snap.open_timeline(snap_path) as timeline:
        steps = timeline.run().steps
        preview = _vars(StepDiffer().diff(steps[0], steps[1]))[("agent", "data")]
        # The preview shows 50 of the 500 keys: only the length change is visible.
        assert [c.kind for c in preview.changes] == ["len"]
        full = StepDiffer(DiffOptions(full_values=True, trust=True)).diff(steps[0], steps[1])
        data = _vars(full)[("agent", "data")]
        assert [(c.path, c.kind, c.old, c.new) for c in data.changes] == [
            ("['k250']", "changed", "250", "-1"), ("['k600']", "added", None, "1")]
        assert full.mode == "full"


def _numbers():
    yield 1


def test_full_values_fall_back_to_previews_for_placeholders(snap_path):
    def agent():
        lock = (i for i in range(3))  # generators have no payload: a placeholder
        count = 1
        snap.checkpoint("a")
        lock = _numbers()
        count = 2
        snap.checkpoint("b")
        return lock, count

    with snap.record(snap_path):
        agent()
    with snap.open_timeline(snap_path) as timeline:
        steps = timeline.run().steps
        result = StepDiffer(DiffOptions(full_values=True, trust=True)).diff(steps[0], steps[1])
        found = _vars(result)
        lock = found[("agent", "lock")]
        assert any("compared previews" in note and "no payload" in note
                   for note in lock.diff.notes)
        assert [c.kind for c in lock.changes] == ["changed"]
        assert "_numbers" in lock.changes[0].new
        assert [(c.old, c.new) for c in found[("agent", "count")].changes] == [("1", "2")]


def test_time_limit_marks_the_step_diff_partial(timeline):
    steps = timeline.run().steps
    result = StepDiffer(DiffOptions(time_limit=1e-9)).diff(steps[0], steps[2])
    assert result.partial
    assert any("time limit" in note and "not compared" in note for note in result.notes)


def _appending_agent():
    messages = [{"role": "user", "content": "x" * 300} for _ in range(100)]
    snap.checkpoint("a")
    messages.append({"role": "assistant", "content": "y"})
    snap.checkpoint("b")


def test_shared_children_blob_is_not_read(snap_path):
    """Previews stored with their children by reference (issue 7): equal children keys mean
    equal children, so an append is diffed from the two top nodes alone."""
    with snap.record(str(snap_path)):
        _appending_agent()
    with snap.open_timeline(snap_path) as timeline:
        steps = timeline.run().steps
        before = steps[0].frames[-1].locals["messages"]
        kids = timeline.json_blob(before.preview_key).get("kids")
        assert kids, "the capture side stores large children by reference"
        read = []
        real = timeline.json_blob
        timeline.json_blob = lambda key: read.append(key) or real(key)
        timeline._json_cache.clear()
        result = StepDiffer().diff(steps[0], steps[1])
        var = _vars(result)[("_appending_agent", "messages")]
        assert [(c.kind, c.old, c.new) for c in var.changes] == [("len", "100", "101")]
        assert kids not in read
