"""The inspector's light reads (summaries, find, matching, plot totals, previews) cover traced
steps stored in trace chunks, checked on the line-traced sample against the full step objects."""

from __future__ import annotations

import pytest

import snapstate_capture as snap
from snapstate_inspect.model.values import PreviewLoader
from tests.conftest import ROOT

SAMPLE = ROOT / "sample_snapshots" / "stack_vm.snap"


@pytest.fixture(scope="module")
def traced():
    with snap.open_timeline(SAMPLE) as timeline:
        run = timeline.runs[-1]
        yield run, list(run.steps)


def test_summaries_list_every_traced_step(traced):
    run, steps = traced
    summaries = run.steps.summaries(0, len(steps))
    assert [s.index for s in summaries] == list(range(len(steps)))
    for summary, step in zip(summaries, steps):
        assert (summary.kind, summary.function, summary.lineno, summary.depth,
                summary.n_changed) == (step.kind, step.function, step.lineno, step.depth,
                                       step.n_changed)
    assert run.steps.summaries(600, 603)[0].index == 600


@pytest.mark.parametrize("where", [{"kind": "call"}, {"function": "assemble"},
                                   {"text": "EXECUTE"}, {"max_depth": 2},
                                   {"function": "execute", "new_stretch": True}])
def test_find_and_matching_agree_with_the_steps(traced, where):
    run, steps = traced

    def matches(i):
        step = steps[i]
        for name, value in where.items():
            if name == "text":
                text = f"{step.function} {step.filename} {step.label or ''}".lower()
                if value.lower() not in text:
                    return False
            elif name == "max_depth":
                if step.depth > value:
                    return False
            elif name == "new_stretch":
                before = steps[i - 1] if i else None
                if before is not None and (before.function, before.depth) == (
                        step.function, step.depth):
                    return False
            elif getattr(step, name) != value:
                return False
        return True

    expected = [i for i in range(len(steps)) if matches(i)]
    assert expected, "the condition matches no step of the sample"
    assert run.steps.matching(0, len(steps), **where) == expected
    middle = len(steps) // 2
    after = [i for i in expected if i > middle]
    before = [i for i in expected if i < middle]
    assert run.steps.find(middle, **where) == (after[0] if after else None)
    assert run.steps.find(middle, backward=True, **where) == (before[-1] if before else None)


def test_changed_totals_sum_the_traced_steps(traced):
    run, steps = traced
    assert sum(run.steps.changed_totals(0, len(steps), 7)) == sum(s.n_changed for s in steps)


def test_inline_values_of_traced_steps_have_previews(traced):
    _, steps = traced
    frame = next(s for s in steps[600:] if s.function == "execute").frames[-1]
    pc = frame.locals["pc"]
    assert pc.is_inline
    preview = PreviewLoader().cached(pc)
    assert preview["type"] == "builtins.int" and preview["repr"] == pc.repr
