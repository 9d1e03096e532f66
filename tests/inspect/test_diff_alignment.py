"""Run alignment: inserted, deleted and replaced steps; first divergence; divergent regions."""

from __future__ import annotations

import random

import pytest

import snapstate_capture as snap
from snapstate_inspect.model.alignment import align, diff_runs
from snapstate_inspect.model.diff import StepDiffer, same_content
from tests.conftest import PROGRAMS, run_python


def _sig(name, line=1):
    return ("line", name, line, None)


def _covered(blocks, n, m):
    """Blocks tile both sequences in order."""
    a = b = 0
    for block in blocks:
        assert (block.a_start, block.b_start) == (a, b)
        a, b = block.a_end, block.b_end
    assert (a, b) == (n, m)


def test_identical_sequences_are_one_equal_block():
    seq = [_sig("f", i % 7) for i in range(100)]
    blocks, approximate = align(seq, list(seq))
    assert [(b.tag, b.a_start, b.a_end) for b in blocks] == [("equal", 0, 100)]
    assert not approximate


def test_inserted_steps_do_not_shift_the_rest():
    a = [_sig("loop", i % 3) for i in range(30)]
    b = a[:10] + [_sig("retry"), _sig("retry", 2)] + a[10:]
    blocks, _ = align(a, b)
    assert [(x.tag, x.a_start, x.a_end, x.b_start, x.b_end) for x in blocks] == [
        ("equal", 0, 10, 0, 10), ("insert", 10, 10, 10, 12), ("equal", 10, 30, 12, 32)]


def test_deleted_steps_and_a_replaced_stretch():
    a = [_sig(f"s{i}") for i in range(20)]
    b = a[:5] + a[8:12] + [_sig("other"), _sig("other2")] + a[14:]
    blocks, _ = align(a, b)
    _covered(blocks, len(a), len(b))
    assert [(x.tag, x.a_start, x.a_end, x.b_start, x.b_end) for x in blocks] == [
        ("equal", 0, 5, 0, 5), ("delete", 5, 8, 5, 5), ("equal", 8, 12, 5, 9),
        ("replace", 12, 14, 9, 11), ("equal", 14, 20, 11, 17)]


def test_repetitive_long_runs_align_exactly():
    rng = random.Random(7)
    a = [_sig("tick", rng.randint(1, 4)) for _ in range(10_000)]
    b = list(a)
    inserted = sorted(rng.sample(range(10_000), 25), reverse=True)
    for position in inserted:
        b.insert(position, _sig("extra"))
    del b[5_000:5_040]
    blocks, approximate = align(a, b)
    _covered(blocks, len(a), len(b))
    matched = sum(x.a_end - x.a_start for x in blocks if x.tag == "equal")
    for x in blocks:
        if x.tag == "equal":
            assert a[x.a_start:x.a_end] == b[x.b_start:x.b_end]
    assert matched >= 10_000 - 40 - 25  # an LCS at least as long as the one we built
    assert not approximate


def test_windowed_alignment_when_the_middle_is_huge(monkeypatch):
    from snapstate_inspect.model import alignment

    monkeypatch.setattr(alignment, "MAX_CELLS", 1_000)
    a = [_sig("x", i % 5) for i in range(300)]
    b = [_sig("y")] + a[:150] + [_sig("z")] + a[150:]
    blocks, approximate = align(a, b)
    assert approximate
    _covered(blocks, len(a), len(b))
    for x in blocks:
        if x.tag == "equal":
            assert a[x.a_start:x.a_end] == b[x.b_start:x.b_end]


@pytest.fixture(scope="module")
def agent_runs(tmp_path_factory):
    """The research agent recorded in worlds a, b and short (one file each)."""
    folder = tmp_path_factory.mktemp("agent")
    paths = {}
    for world in ("a", "b", "short"):
        path = folder / f"{world}.snap"
        done = run_python(str(PROGRAMS / "research_agent.py"), str(path), world)
        assert done.returncode == 0, done.stderr
        paths[world] = path
    return paths


def _runs(paths, x, y):
    return snap.open_timeline(paths[x]), snap.open_timeline(paths[y])


def test_first_divergence_names_the_step_and_the_variable(agent_runs):
    ta, tb = _runs(agent_runs, "a", "b")
    with ta, tb:
        result = diff_runs(ta.run(), tb.run())
        first = result.first_divergence
        assert (first.a_step, first.b_step, first.reason) == (3, 3, "state")
        assert [(frame, var.name) for frame, var in first.diff.variables()] == [
            ("run_agent", "result")]
        change = first.diff.variables()[0][1].changes[0]
        assert (change.old, change.new) == ("'page v1: the answer is 42'",
                                            "'page v2: the answer is 43'")
        assert result.counts() == {"matched": 9, "inserted": 2, "deleted": 0}
        kinds = [(r.kind, r.a_start, r.a_end, r.b_start, r.b_end) for r in result.regions]
        assert kinds == [("state", 3, 6, 3, 6), ("inserted", 6, 6, 6, 8),
                         ("state", 6, 9, 8, 11)]
        inserted = result.regions[1]
        assert [s.label for s in result.b_steps[inserted.b_start:inserted.b_end]] == [
            "retry", "observe"]
        assert result.partner("b", 9) == 7 and result.partner("b", 6) is None
        assert not result.identical


def test_reversed_direction_reports_deleted_steps(agent_runs):
    tb, ta = _runs(agent_runs, "b", "a")
    with ta, tb:
        result = diff_runs(tb.run(), ta.run())
        assert [r.kind for r in result.regions] == ["state", "deleted", "state"]
        assert result.counts()["deleted"] == 2


def test_a_run_that_ends_early_parts_in_sequence(agent_runs):
    ta, ts = _runs(agent_runs, "a", "short")
    with ta, ts:
        result = diff_runs(ta.run(), ts.run())
        first = result.first_divergence
        assert first.reason == "state" and (first.a_step, first.b_step) == (1, 1)
        assert result.regions[-1].kind == "deleted"
        last = result.regions[-1]
        assert last.b_start == last.b_end == len(result.b_steps)


def test_same_program_same_world_is_identical(agent_runs, tmp_path):
    again = tmp_path / "again.snap"
    assert run_python(str(PROGRAMS / "research_agent.py"), str(again), "a").returncode == 0
    ta, tb = snap.open_timeline(agent_runs["a"]), snap.open_timeline(again)
    with ta, tb:
        result = diff_runs(ta.run(), tb.run())
        assert result.identical and result.first_divergence is None and result.regions == []


_EXTRA = []


def _program():
    value = 1
    snap.checkpoint("one")
    if _EXTRA:
        snap.checkpoint("extra")
    value = 2
    snap.checkpoint("two")
    return value


def _record_program(path):
    # `path` is a str: a PosixPath caches its text in a slot after first use, which the
    # preview shows, so the second run's root frame would differ.
    with snap.record(path):
        _program()


def test_sequence_divergence_comes_first_when_steps_part_before_state_differs(snap_path):
    _record_program(str(snap_path))
    _EXTRA.append(True)
    try:
        _record_program(str(snap_path))
    finally:
        _EXTRA.clear()
    with snap.open_timeline(snap_path) as timeline:
        a, b = timeline.runs
        result = diff_runs(a, b)
        first = result.first_divergence
        assert (first.reason, first.a_step, first.b_step) == ("sequence", 1, 1)
        assert "B has 1 step(s) not in A" in first.message
        assert first.to_json()["reason"] == "sequence"
        assert [r.kind for r in result.regions] == ["inserted"]


def _record_tagged(path, tag):
    with snap.record(path):
        _program()


def test_inputs_the_runs_start_with_are_set_aside(snap_path):
    _record_tagged(str(snap_path), "first")
    _record_tagged(str(snap_path), "second")
    with snap.open_timeline(snap_path) as timeline:
        a, b = timeline.runs
        result = diff_runs(a, b)
        assert [(frame, var.name) for frame, var in result.inputs.variables()] == [
            ("_record_tagged", "tag")]
        assert result.first_divergence is None and result.regions == []
        assert not result.identical  # the inputs differ
        assert result.to_json()["inputs"][0]["changes"][0]["new"] == "'second'"
        strict = diff_runs(a, b, strict=True)
        assert strict.inputs is None
        first = strict.first_divergence
        assert (first.a_step, first.b_step, first.reason) == (0, 0, "state")
        assert [r.kind for r in strict.regions] == ["state"]
        assert (strict.regions[0].a_start, strict.regions[0].a_end) == (0, 2)


def test_sample_pair_diverges_at_the_human_answer():
    """The committed sample pair (issue 5): same agent, the reviewer answers `skip 5` in B."""
    root = PROGRAMS.parent.parent / "sample_snapshots"
    with snap.open_timeline(root / "research_agent.snap") as ta, \
            snap.open_timeline(root / "research_agent_b.snap") as tb:
        run_a, run_b = ta.run(), tb.run()
        result = diff_runs(run_a, run_b)
        # Expected, found independently: the first `ask_human` step (its return or its
        # recorded effect) whose step values differ between the runs.
        def values(step):
            return {name: value.repr for name, value in step.extra.items()}
        expected = next(s.index for s in run_a.steps if s.label == "ask_human"
                        and values(s) != values(run_b.steps[s.index]))
        first = result.first_divergence
        assert (first.a_step, first.b_step, first.reason) == (expected, expected, "state")
        [(frame, var)] = first.diff.variables()
        assert frame == "step values"
        assert (var.changes[0].old, var.changes[0].new) == ("'yes'", "'skip 5'")
        # The output path differs from the start: an input, not the divergence.
        assert [var.name for _, var in result.inputs.variables()] == ["args"]


def test_rows_put_the_runs_side_by_side(agent_runs):
    ta, tb = _runs(agent_runs, "a", "b")
    with ta, tb:
        result = diff_runs(ta.run(), tb.run())
        rows = [(r.a, r.b, r.status) for r in result.rows()]
        assert rows[:4] == [(0, 0, "same"), (1, 1, "same"), (2, 2, "same"), (3, 3, "state")]
        assert rows[6:8] == [(None, 6, "inserted"), (None, 7, "inserted")]
        assert rows[-1] == (8, 10, "state") and len(rows) == 11
        # A one-sided row is diffed against the other run's last common step.
        inserted = result.pair_diff(result.rows()[6])
        assert (inserted.a.index, inserted.b.index) == (5, 6)
        same = result.pair_diff(result.rows()[0])
        assert same.identical


def test_traced_runs_with_inline_scalars_are_compared(tmp_path):
    path = tmp_path / "traced.snap"
    for bump in ("0", "5"):
        done = run_python(str(PROGRAMS / "traced_pair.py"), str(path), bump)
        assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        a, b = timeline.runs
        assert any(getattr(v, "is_inline", False)
                   for s in a.steps for f in s.frames for v in f.locals.values())
        result = diff_runs(a, b)
        first = result.first_divergence
        assert first.reason == "state"
        [(frame, var)] = first.diff.variables()
        assert (frame, var.name, var.old[1], var.new[1]) == ("main", "bump", "0", "5")
        assert [(r.kind, r.a_start) for r in result.regions] == [("state", first.a_step)]
        later = [StepDiffer().diff(a.steps[i], b.steps[i]) for i in range(len(a.steps))]
        changed = [i for i, d in enumerate(later)
                   if any(v.name == "total" for _, v in d.variables())]
        assert changed and all(a.steps[i].function == "work" for i in changed)


def test_same_content_tells_inline_scalars_apart(snap_path):
    from snapstate_capture.store.reader import Value

    with snap.record(str(snap_path)):
        snap.checkpoint("x")
    with snap.open_timeline(snap_path) as timeline:
        one, true, also_one = (Value(timeline, "x", {"v": v}) for v in (1, True, 1))
        assert not same_content(one, true)
        assert same_content(one, also_one)
        assert StepDiffer().diff_value("x", one, true).changes[0].kind == "type"


def double(i):
    return i * 2


def count_up(text, turns):
    total = 0
    for i in range(turns):
        total += double(i)
    return total  # the input is only held: the runs differ in it alone


def test_traced_runs_differing_in_an_outer_input_are_compared_without_building_every_step(
        tmp_path, monkeypatch):
    """Two traced runs whose outer frame holds a different input: that frame's stored locals
    differ at every step; the verdict is kept per pair of stored locals, so the steps' frames
    are built a few times, not at each of the ~600 steps (mistune: 12 -> 1.8 s of CPU)."""
    import functools

    from snapstate_capture.store.chunk_reader import TracedStep

    path = tmp_path / "pair.snap"
    for text in ("the first input", "another input"):
        with snap.record(path, trace="calls", include=[__file__]):
            count_up(text, 150)
    built: list[int] = []
    plain = TracedStep.__dict__["frames"].func

    def frames(step):
        built.append(step.index)
        return plain(step)

    counting = functools.cached_property(frames)
    counting.__set_name__(TracedStep, "frames")
    monkeypatch.setattr(TracedStep, "frames", counting)
    with snap.open_timeline(path) as timeline:
        a, b = timeline.runs[-2], timeline.runs[-1]
        assert len(a.steps) == len(b.steps) > 300
        result = diff_runs(a, b)
        assert result.first_divergence is None  # the input differs, the rest follows it
        assert [block.tag for block in result.blocks] == ["equal"]
    assert len(set(built)) < 20, len(set(built))
