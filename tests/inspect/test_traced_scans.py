"""Search, variable history and next/previous change over traced steps (issue 20, point 1).

The chunk scans (``store/chunk_scan.py``) are checked step by step against the slow, obvious
answer computed from the full ``Step`` objects, on line-traced recordings made here of code that
knows nothing about SnapState: the stack-machine interpreter in ``examples/`` and mistune (a
real Markdown parser from PyPI: generators, recursion, frames that come and go).
"""

from __future__ import annotations

import random

import mistune
import pytest

import snapstate_capture as snap
from examples import stack_vm
from snapstate_inspect.model.search import iter_search, preview_path
from snapstate_inspect.model.values import PreviewLoader, VariableKey
from snapstate_inspect.model.var_history import Change, find_change, iter_changes


@pytest.fixture(scope="module")
def vm_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("vm") / "vm.snap"
    with snap.record(path, trace="lines", include=[stack_vm.__file__]):
        stack_vm.main()
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        yield run, list(run.steps)


def _hits(run, query):
    found = {}
    for item in iter_search(run, query):
        if isinstance(item, list):
            for hit in item:
                assert hit.step not in found, "a step listed twice"
                found[hit.step] = hit.where
    return found


def _expected_hits(steps, needle):
    loader = PreviewLoader(size=100_000)
    expected = {}
    for step in steps:
        wheres = []
        for label, text in (("function", step.function), ("label", step.label),
                            ("file", step.filename)):
            if text and needle in text.lower():
                wheres.append(label)
                break
        if not wheres:
            for frame in reversed(step.frames):
                for name, value in frame.locals.items():
                    if needle in name.lower():
                        wheres.append(f"value {name}")
                        continue
                    path = preview_path(loader.load(value), needle)
                    if path is not None:
                        wheres.append(f"value {name}{path}")
                if wheres:
                    break
        if wheres:
            expected[step.index] = wheres
    return expected


@pytest.mark.parametrize("query", ["1071", "push", "gcd_done", "stack_vm", "Execute", "21",
                                   "'b'", "nowhere-at-all"])
def test_search_finds_what_the_steps_hold(vm_run, query):
    run, steps = vm_run
    assert run.steps.has_traced()
    found = _hits(run, query)
    expected = _expected_hits(steps, query.lower())
    assert sorted(found) == sorted(expected)
    for index, where in found.items():
        assert where in expected[index], (index, where, expected[index])


@pytest.mark.parametrize("query", ["push", "gcd_done", "stack_vm", "21", "'b'"])
def test_an_at_search_matches_functions_files_and_labels_only(vm_run, query):
    """``@text`` never matches a value — not an inline scalar, not a local's name (a traced
    networkx run's ``@bidirectional_dijkstra`` listed 4,712 steps holding it by name)."""
    run, steps = vm_run
    needle = query.lower()
    expected = {step.index for step in steps
                if any(text and needle in text.lower()
                       for text in (step.function, step.label, step.filename))}
    found = _hits(run, "@" + query)
    assert sorted(found) == sorted(expected)
    assert not any(where.startswith("value") for where in found.values())


def test_search_for_a_value_inside_a_container_names_its_path(vm_run):
    run, _ = vm_run
    found = _hits(run, "1071")
    assert found, "README step 6: /1071 must find the program holding ('push', 1071)"
    assert "value program[0][1]" in found.values()


_UNSEEN = object()


def _expected_changes(steps, key):
    """Steps where the frame at ``key.position`` runs ``key.function`` and its local differs
    from the last step where such a frame ran (steps without it skipped); the first step
    that has the local counts as its addition."""
    changes, last = [], _UNSEEN
    for step in steps:
        frames = step.frames
        if key.position >= len(frames) or frames[key.position].function != key.function:
            continue
        value = frames[key.position].locals.get(key.name)
        digest = value.digest if value is not None else None
        if (digest is not None) if last is _UNSEEN else digest != last:
            changes.append(step.index)
        last = digest
    return changes


@pytest.mark.parametrize("name", ["pc", "stack", "variables", "op", "output"])
def test_history_and_change_navigation_match_the_steps(vm_run, name):
    run, steps = vm_run
    execute = next(s for s in steps if s.function == "execute")
    key = VariableKey(len(execute.frames) - 1, "execute", name)
    expected = _expected_changes(steps, key)
    assert len(expected) > 1, "the variable changes in the recording"
    forward = [c.step for c in iter_changes(run, key, 0, len(steps)) if isinstance(c, Change)]
    assert forward == expected
    backward = [c.step for c in iter_changes(run, key, 0, len(steps), backward=True)
                if isinstance(c, Change)]
    assert backward == expected[::-1]
    for here in (0, expected[0], expected[len(expected) // 2] - 1, len(steps) - 1):
        later = [i for i in expected if i > here]
        earlier = [i for i in expected if i < here]
        assert find_change(run, key, here) == (later[0] if later else None)
        assert find_change(run, key, here, backward=True) == (earlier[-1] if earlier else None)


def test_history_of_a_path_inside_a_value(vm_run):
    run, steps = vm_run
    execute = next(s for s in steps if s.function == "execute")
    key = VariableKey(len(execute.frames) - 1, "execute", "variables", ("['a']",))
    changes = [c for c in iter_changes(run, key, 0, len(steps)) if isinstance(c, Change)]
    loader = PreviewLoader()

    def shown(ref):
        return dict(preview_children(loader, run, ref)).get("['a']", {}).get("repr")

    # a = 1071, then Euclid's remainders down to the gcd, 21
    assert [shown(c.new) for c in changes][:2] == ["1071", "462"]
    assert shown(changes[-1].new) == "21"


def preview_children(loader, run, ref):
    from snapstate_capture import Value
    from snapstate_inspect.model.values import children

    return children(loader.load(Value(run.timeline, "variables", ref)))


@pytest.fixture(scope="module")
def markdown_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("md") / "md.snap"
    markdown = mistune.create_markdown()
    with snap.record(path, trace="lines", include=[f"{mistune.__path__[0]}/*.py"]):
        markdown("# Title\n\nSome *emphasis* and a [link](https://example.com).\n\n- a\n- b\n")
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        yield run, list(run.steps)


def test_every_variable_of_a_traced_parser_changes_where_the_steps_say(markdown_run):
    run, steps = markdown_run
    keys = sorted({VariableKey(position, frame.function, name)
                   for step in steps[::4] for position, frame in enumerate(step.frames)
                   for name in frame.locals}, key=str)
    sample = random.Random(20).sample(keys, min(60, len(keys)))
    assert any(len(_expected_changes(steps, key)) > 2 for key in sample)
    for key in sample:
        expected = _expected_changes(steps, key)
        forward = [c.step for c in iter_changes(run, key, 0, len(steps))
                   if isinstance(c, Change)]
        backward = [c.step for c in iter_changes(run, key, 0, len(steps), backward=True)
                    if isinstance(c, Change)]
        assert forward == expected, key
        assert backward == expected[::-1], key


@pytest.mark.parametrize("query", ["emphasis", "example.com", "render_token", "list_item"])
def test_search_in_a_traced_parser_finds_what_the_steps_hold(markdown_run, query):
    run, steps = markdown_run
    found = _hits(run, query)
    expected = _expected_hits(steps, query.lower())
    assert found and sorted(found) == sorted(expected)
    for index, where in found.items():
        assert where in expected[index], (index, where, expected[index])
