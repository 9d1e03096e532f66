"""UI-free view-models of the inspector: navigation targets, history, variable changes, search,
run tree, previews and pages — on the recorded agent timeline and on small made-up data."""

from __future__ import annotations

import json

import snapstate_capture as snap
from snapstate_inspect.model.history import History, Place
from snapstate_inspect.model.navigation import Navigator
from snapstate_inspect.model.runs import run_tree, step_in_other_run
from snapstate_inspect.model.search import Hit, iter_search
from snapstate_inspect.model.values import (ADDED, CHANGED, REMOVED, SAME, PreviewLoader,
                                            VariableKey, child_changes, child_page,
                                            frame_changes)
from snapstate_inspect.model.var_history import Change, find_change, iter_changes


def test_navigator_targets(reader):
    nav = Navigator(reader.runs[-1])
    assert (nav.first(), nav.last(), nav.count()) == (0, 28, 29)
    assert nav.next(28) is None and nav.previous(0) is None and nav.next(3) == 4
    assert nav.step_over(0) == 2 and nav.step_over(2, backward=True) == 0
    assert nav.call(0) == 7 and nav.call(7, backward=True) == 0
    assert nav.call(1) == 8  # plan's checkpoint: the next stretch running plan
    assert nav.exception(0) == 19 and nav.exception(19) == 28 and nav.exception(28) is None
    assert nav.exception(28, backward=True) == 19


def test_reader_find_and_matching(reader):
    steps = reader.runs[-1].steps
    assert steps.matching(0, 29, kind="exception") == [19, 28]
    assert steps.matching(0, 29, text="ROUND DONE") == [6, 13, 20, 27]
    assert steps.find(5, text="planned") == 8
    assert [s.index for s in steps.summaries(5, 8)] == [5, 6, 7]
    assert sum(steps.changed_totals(0, 29, 3)) == sum(s.n_changed for s in steps)


def test_history_back_and_forward():
    history = History(limit=3)
    a, b, c, d = (Place("r", n) for n in range(4))
    history.visit(a)
    history.visit(b)
    assert history.back(c) == b and history.back(b) == a and history.back(a) is None
    assert history.forward(a) == b and history.forward(b) == c
    history.visit(c)
    assert not history.can_forward
    for place in (a, b, c, d):
        history.visit(place)
    assert [history.back(d), history.back(c), history.back(b), history.back(a)][-1] is None


def test_variable_changes_forward_backward_and_inside(reader):
    run = reader.runs[-1]
    memory = VariableKey(1, "run_agent", "memory")
    changes = [c for c in iter_changes(run, memory, 0, 29) if isinstance(c, Change)]
    assert [c.step for c in changes] == [0, 6, 13, 20, 27]
    assert changes[0].kind == "added" and changes[1].kind == "changed"
    backward = [c.step for c in iter_changes(run, memory, 0, 29, backward=True)
                if isinstance(c, Change)]
    assert backward == [27, 20, 13, 6, 0]
    assert find_change(run, memory, 6) == 13 and find_change(run, memory, 13, backward=True) == 6
    assert find_change(run, memory, 27) is None
    # a path inside the value: memory[2] appears when the third reply is appended
    third = VariableKey(1, "run_agent", "memory", ("[2]",))
    assert [c.step for c in iter_changes(run, third, 0, 29) if isinstance(c, Change)] == [20]
    # a variable of an inner frame that comes and goes: tool changes per call_tool call
    tool = VariableKey(2, "call_tool", "tool")
    steps = [c.step for c in iter_changes(run, tool, 0, 29) if isinstance(c, Change)]
    assert steps == [4, 18, 25]  # search -> flaky -> search


def test_search_finds_columns_and_values(reader):
    run = reader.runs[-1]
    hits = [h for item in iter_search(run, "flaky", chunk=7) if isinstance(item, list)
            for h in item]
    assert Hit(18, "value tool", 2, "tool") in hits  # in call_tool's frame, the third
    assert all(h.step >= 17 for h in hits)
    labels = [h for item in iter_search(run, "planned") if isinstance(item, list) for h in item]
    assert [(h.step, h.where) for h in labels] == [(1, "label"), (8, "label"), (15, "label"),
                                                   (22, "label")]
    assert list(iter_search(run, "")) == []


def test_frame_changes_and_child_marks(reader):
    steps = reader.runs[-1].steps
    now, before = steps[13].frames[1], steps[12].frames[1]
    marks = frame_changes(now, before)
    assert marks["memory"] == CHANGED and marks["rounds"] == SAME
    assert "round_no" in marks
    assert set(frame_changes(now, None).values()) == {ADDED}
    gone = frame_changes(before, now)
    assert all(v != REMOVED for v in gone.values()) or REMOVED in gone.values()
    old = {"children": [["[0]", {"repr": "1"}], ["[1]", {"repr": "2"}]]}
    new = {"children": [["[0]", {"repr": "1"}], ["[2]", {"repr": "3"}]]}
    assert child_changes(new, old) == {"[0]": SAME, "[2]": ADDED, "[1]": REMOVED}


def test_pages():
    preview = {"children": [[f"[{n}]", {"repr": str(n)}] for n in range(250)]}
    page, left = child_page(preview, 0)
    assert len(page) == 100 and left == 150
    page, left = child_page(preview, 200)
    assert [label for label, _ in page][:2] == ["[200]", "[201]"] and left == 0


def test_preview_loader_reads_big_previews_slowly_and_caches(tmp_path):
    path = tmp_path / "big.snap"
    with snap.record(path, name="big",
                     options=snap.CaptureOptions(values=snap.ValueOptions(max_items=20_000))):
        numbers = list(range(20_000))
        snap.checkpoint("big")
    assert numbers
    with snap.open_timeline(path) as reader:
        value = reader.runs[-1].steps[0].frames[-1].locals["numbers"]
        loader = PreviewLoader()
        assert not loader.quick([value])  # a preview of 20,000 children is large
        preview = loader.load(value)
        assert len(preview["children"]) == 20_000
        assert loader.cached(value) is preview and loader.quick([value])


def test_run_tree_and_switching_position(tmp_path):
    path = tmp_path / "forks.snap"
    with snap.record(path, name="parent") as parent:
        for n in range(5):
            snap.checkpoint(f"p{n}")
    with snap.record(path, name="fork", parent=(parent.run_id, 2)):
        for n in range(4):
            snap.checkpoint(f"f{n}")
    with snap.open_timeline(path) as reader:
        runs = reader.runs
        roots = run_tree(runs)
        assert [r.run.name for r in roots] == ["parent"]
        assert [c.run.name for c in roots[0].children] == ["fork"]
        parent_run, fork = runs
        assert step_in_other_run(parent_run, fork, 4, len(fork.steps)) == 2
        assert step_in_other_run(parent_run, fork, 1, len(fork.steps)) == 1
        assert step_in_other_run(fork, parent_run, 3, len(parent_run.steps)) == 3
        assert step_in_other_run(fork, parent_run, 3, 0) == -1


def test_search_finds_what_an_effect_raised_in_its_step_values(tmp_path):
    """A service answering 503 is in the exception its effect step holds, not in a local:
    searching ``503`` found nothing there (the step values were never searched)."""
    import snapstate_capture as snap

    from .conftest import record_failing_fetches

    path = record_failing_fetches(tmp_path / "down.snap")
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        hits = [h for item in iter_search(run, "503") if isinstance(item, list) for h in item]
        effects = [s.index for s in run.steps if s.kind == "effect"]
        assert [h.step for h in hits] == effects and len(effects) == 2
        assert all(h.where.startswith("step value ") and h.frame is None for h in hits)
