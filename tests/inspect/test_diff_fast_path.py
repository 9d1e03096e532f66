"""diff_runs' fast path (issue 19, point 3): the same result as asking same_state pair by pair,
on real recorded runs, with the frame records read a few hundred per query."""

from __future__ import annotations

import json

import pytest

import snapstate_capture as snap
from snapstate_inspect.model.alignment import diff_runs
from snapstate_inspect.model.step_pages import StepPages
from snapstate_inspect.model.value_diff import DiffOptions

CONFIG = {"model": "m1", "tools": [{"name": "search", "options": {"depth": 3, "retry": 2}}]}
DEEP = {"model": "m1", "tools": [{"name": "search", "options": {"depth": 4, "retry": 2}}]}


def _nested(i, label):
    snap.checkpoint(label)  # one frame deeper than the loop's own checkpoint, same label


def _loop(steps, skip, extra, deep, shout, nested, tag):
    total = 0
    notes = {f"n{k}": k for k in range(4)}
    for i in range(steps):
        total += i
        if skip[0] <= i < skip[1]:
            continue
        if i in extra:
            snap.checkpoint("retry")
        notes = {**notes, f"n{i % 4}": i}
        config = DEEP if deep[0] <= i < deep[1] else CONFIG
        if i in shout:
            only_here = "loud"  # a local only one run has at these steps
        if i in nested:
            _nested(i, f"turn {i // 20} tick {i % 3}")
        else:
            snap.checkpoint(f"turn {i // 20} tick {i % 3}", score=i % 5 if i < 150 else 0)
        only_here = None
        del config, only_here


def _record(path, tag, **kw):
    options = {"steps": 200, "skip": (0, 0), "extra": frozenset(), "deep": (0, 0),
               "shout": frozenset(), "nested": frozenset()} | kw
    with snap.record(path, name=tag):
        _loop(options["steps"], options["skip"], options["extra"], options["deep"],
              options["shout"], options["nested"], tag)


@pytest.fixture
def two_runs(tmp_path):
    """Run A, and run B with other inputs, 6 steps left out, 3 retries inserted, ``config``
    differing four levels down for 30 steps, a local only B has at 5 steps, 4 checkpoints one
    frame deeper, and checkpoint extras that differ from step 150 of A on."""
    path_a, path_b = str(tmp_path / "a.snap"), str(tmp_path / "b.snap")
    _record(path_a, "first")
    _record(path_b, "second", skip=(100, 106), extra=frozenset({17, 60, 171}),
            deep=(120, 150), shout=frozenset({30, 31, 32, 80, 81}),
            nested=frozenset({40, 41, 90, 185}))
    return path_a, path_b


def _both_ways(path_a, path_b, **kw):
    out = []
    for fast in (True, False):
        with snap.open_timeline(path_a) as ta, snap.open_timeline(path_b) as tb:
            result = diff_runs(ta.run(), tb.run(), fast=fast, **kw)
            out.append((result.to_json(), [(r.a, r.b, r.status) for r in result.rows()],
                        result))
    return out


def test_fast_and_careful_paths_give_the_same_run_diff(two_runs):
    fast, careful = _both_ways(*two_runs)
    assert json.dumps(fast[0], sort_keys=True) == json.dumps(careful[0], sort_keys=True)
    assert fast[1] == careful[1]
    result = fast[2]
    kinds = {r.kind for r in result.regions_all}
    assert {"state", "inserted", "deleted"} <= kinds
    # the deep difference is found (below the preview's depth: "hidden", --full names it)
    [config] = _config_changes(result)
    assert [c.kind for c in config.changes] == ["hidden"]
    # inputs set aside, not divergence
    assert {var.name for _, var in result.inputs.variables()} >= {"tag", "skip", "deep"}


def _config_changes(result):
    deep = [r for r in result.regions_all if r.kind == "state" and r.diff is not None
            and any(var.name == "config" for _, var in r.diff.variables())]
    assert deep, [(r.kind, r.a_start, r.a_end) for r in result.regions_all]
    assert (deep[0].a_start, deep[0].a_end - deep[0].a_start) == (120, 30)
    return [var for _, var in deep[0].diff.variables() if var.name == "config"]


def test_fast_and_careful_paths_agree_on_full_values_and_strict(two_runs):
    for kw in ({"options": DiffOptions(full_values=True, trust=True)}, {"strict": True}):
        fast, careful = _both_ways(*two_runs, **kw)
        assert json.dumps(fast[0], sort_keys=True) == json.dumps(careful[0], sort_keys=True)
        assert fast[1] == careful[1]
        if "options" in kw:  # payloads loaded: the leaf four levels down is named
            [config] = _config_changes(fast[2])
            assert [c.path for c in config.changes] == ["['tools'][0]['options']['depth']"]
            assert (config.changes[0].old, config.changes[0].new) == ("3", "4")


def test_frame_records_are_read_in_batches(two_runs, monkeypatch):
    """The old code read every differing frame record with a query of its own (two a pair)."""
    from snapstate_capture.store.sqlite.blobs import BlobQueries

    single = {"n": 0}
    original = BlobQueries.blob_row

    def counted(self, key):
        single["n"] += 1
        return original(self, key)

    monkeypatch.setattr(BlobQueries, "blob_row", counted)
    with snap.open_timeline(two_runs[0]) as ta, snap.open_timeline(two_runs[1]) as tb:
        result = diff_runs(ta.run(), tb.run())
        pairs = result.counts()["matched"]
    assert pairs > 150
    assert single["n"] < pairs // 4, single["n"]


def test_step_pages_read_like_the_run_steps(two_runs):
    with snap.open_timeline(two_runs[1]) as timeline:
        steps = timeline.run().steps
        pages = StepPages(steps, len(steps), page=16, keep=2)
        assert len(pages) == len(steps)
        for i in (0, 15, 16, 17, len(steps) - 1, 3, 150, -1):
            assert pages[i].index == steps[i].index and pages[i].label == steps[i].label
        assert [s.index for s in pages[30:35]] == [30, 31, 32, 33, 34]
        with pytest.raises(IndexError):
            pages[len(steps)]


def test_prefetched_blobs_read_without_a_query_of_their_own(two_runs, monkeypatch):
    from snapstate_capture.store.sqlite.blobs import BlobQueries

    with snap.open_timeline(two_runs[0]) as timeline:
        keys = [k for s in timeline.run().steps for k in s.frame_keys]
        expected = {k: timeline.blob(k) for k in keys}
    with snap.open_timeline(two_runs[0]) as timeline:
        timeline.prefetch(keys)
        monkeypatch.setattr(BlobQueries, "blob_row", lambda *a: pytest.fail("one query a blob"))
        monkeypatch.setattr(BlobQueries, "blob_chain", lambda *a, **k: pytest.fail("chain"))
        assert {k: timeline.blob(k) for k in keys} == expected
