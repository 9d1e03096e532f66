"""Full-value diff of big chunked dicts from their differing chunks (issue 19): the same result
as loading both values whole, and the whole load wherever the chunks do not line up."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest

import snapstate_capture as snap
from snapstate_capture.capture import chunked
from snapstate_capture.trust import payload_chunks as chunks_module
from snapstate_capture.values import chunk_layout
from snapstate_inspect.model import chunk_diff, diff as diff_module
from snapstate_inspect.model.diff import StepDiffer
from snapstate_inspect.model.value_diff import DiffOptions


def _hold(table):
    snap.checkpoint("state")


def _record(path, a, b, *, two_runs=False):
    if two_runs:
        for value in (a, b):
            with snap.record(str(path), name="run"):
                _hold(value)
    else:
        with snap.record(str(path), name="states"):
            _hold(a)
            _hold(b)


def _steps(timeline, two_runs):
    if two_runs:
        runs = timeline.runs
        return runs[0].steps[0], runs[1].steps[0]
    steps = timeline.run().steps
    return steps[0], steps[1]


def _both(path, monkeypatch, *, two_runs=False, trust=True):
    """(JSON of the diff through chunk_diff, whether it answered, JSON of the whole load)."""
    answered = []
    real = chunk_diff.diff_chunked

    def spy(*args, **kw):
        result = real(*args, **kw)
        answered.append(result is not None)
        return result

    options = DiffOptions(full_values=True, trust=trust)
    with snap.open_timeline(path, trust=trust) as timeline:
        monkeypatch.setattr(diff_module, "diff_chunked", spy)
        fast = StepDiffer(options).diff(*_steps(timeline, two_runs)).to_json()
        monkeypatch.setattr(diff_module, "diff_chunked", lambda *args, **kw: None)
        whole = StepDiffer(options).diff(*_steps(timeline, two_runs)).to_json()
    return fast, any(answered), whole


def _table(n, value=int):
    return {f"key{i}": value(i) for i in range(n)}


def _changes(result):
    """The changes of the ``table`` local (the recording frame holds the values too)."""
    return [c for frame in result["frames"] for v in frame["variables"] for c in v["changes"]
            if v["name"] == "table"]


@pytest.mark.parametrize("n", [5_000, 20_000])  # 20 chunks in the top manifest; 79 in groups
def test_changes_spread_across_chunks(tmp_path, monkeypatch, n):
    a = _table(n)
    b = dict(a)
    for i in range(0, n, n // 10):  # ten changes, each in another chunk
        b[f"key{i + 7}"] = -1
    _record(tmp_path / "t.snap", a, b)
    fast, answered, whole = _both(tmp_path / "t.snap", monkeypatch)
    assert answered and fast == whole
    assert len(_changes(fast)) == 10


def test_two_runs(tmp_path, monkeypatch):
    a = _table(3_000, str)
    b = dict(a)
    b["key10"], b["key2999"] = "ten", "last"
    _record(tmp_path / "t.snap", a, b, two_runs=True)
    fast, answered, whole = _both(tmp_path / "t.snap", monkeypatch, two_runs=True)
    assert answered and fast == whole
    assert len(_changes(fast)) == 2


def test_container_values(tmp_path, monkeypatch):
    a = {f"m{i}": {"role": "user", "content": f"text {i}", "n": [i]} for i in range(400)}
    b = {k: dict(v) for k, v in a.items()}
    b["m5"]["content"] = "edited"
    b["m390"]["n"] = [1, 2]
    _record(tmp_path / "t.snap", a, b)
    fast, answered, whole = _both(tmp_path / "t.snap", monkeypatch)
    assert answered and fast == whole
    assert [c["path"] for c in _changes(fast)] == [
        "table['m5']['content']", "table['m390']['n'][0]", "table['m390']['n'][1]"]


def test_key_inserted_and_removed_at_the_end(tmp_path, monkeypatch):
    a = _table(5_000)
    b = dict(a)
    b["new key"] = 1       # goes last: the last chunk differs
    b["key3"] = -3
    _record(tmp_path / "t.snap", a, b)
    fast, answered, whole = _both(tmp_path / "t.snap", monkeypatch)
    assert answered and fast == whole
    kinds = sorted(c["kind"] for c in _changes(fast))
    assert kinds == ["added", "changed"]
    _record(tmp_path / "u.snap", b, a)
    fast, answered, whole = _both(tmp_path / "u.snap", monkeypatch)
    assert answered and fast == whole
    assert sorted(c["kind"] for c in _changes(fast)) == ["changed", "removed"]


def test_key_removed_near_the_front_shifts_every_chunk(tmp_path, monkeypatch):
    a = _table(5_000)
    b = dict(a)
    del b["key4"]          # every chunk after it moves by one pair: the whole load
    b["key4999"] = 0
    _record(tmp_path / "t.snap", a, b)
    fast, answered, whole = _both(tmp_path / "t.snap", monkeypatch)
    assert not answered and fast == whole
    assert len(_changes(fast)) == 2


def test_key_removed_late_in_the_dict(tmp_path, monkeypatch):
    a = _table(5_000)
    b = dict(a)
    del b["key4900"]       # only the last chunk shifts
    _record(tmp_path / "t.snap", a, b)
    fast, answered, whole = _both(tmp_path / "t.snap", monkeypatch)
    assert answered and fast == whole
    assert [c["kind"] for c in _changes(fast)] == ["removed"]


def test_different_lengths(tmp_path, monkeypatch):
    a = _table(5_000)
    b = _table(5_600)      # more chunks: the whole load
    b["key1"] = "one"
    _record(tmp_path / "t.snap", a, b)
    fast, answered, whole = _both(tmp_path / "t.snap", monkeypatch)
    assert not answered and fast == whole
    assert len(_changes(fast)) == DiffOptions().max_changes  # 601 differences, capped


def test_a_list_instead_of_a_dict(tmp_path, monkeypatch):
    a = list(range(5_000))
    b = list(a)
    b[10], b[4000] = -1, -2
    _record(tmp_path / "t.snap", a, b)
    fast, answered, whole = _both(tmp_path / "t.snap", monkeypatch)
    assert not answered and fast == whole
    assert len(_changes(fast)) == 2
    _record(tmp_path / "u.snap", _table(5_000), a)  # a dict becomes a list
    fast, answered, whole = _both(tmp_path / "u.snap", monkeypatch)
    assert not answered and fast == whole


def test_untrusted_file_loads_no_chunk(tmp_path, monkeypatch, isolated_user_config):
    a = _table(5_000)
    b = dict(a)
    b["key1"] = -1
    _record(tmp_path / "t.snap", a, b)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "someone-else"))  # not our run now
    loaded = []
    monkeypatch.setattr(chunks_module, "loads", lambda *args: loaded.append(args))
    fast, answered, whole = _both(tmp_path / "t.snap", monkeypatch, trust=False)
    assert not answered and not loaded and fast == whole
    assert "compared previews: payloads not loaded" in str(fast)


def test_the_layout_bytes_rebuild_the_value_through_the_join_functions():
    """Files written long ago call ``JOIN_MODULE``'s join functions: they must stay there."""
    assert chunk_layout.JOIN_MODULE == chunked.__name__
    pairs = chunk_layout.piece(pickle.dumps([("a", 1), ("b", 2)], 5))
    items = chunk_layout.piece(pickle.dumps([1, 2, 3], 5))
    assert pickle.loads(chunk_layout.DICT_HEADER + pairs + pairs + chunk_layout.TRAILER) == \
        {"a": 1, "b": 2}
    assert pickle.loads(chunk_layout.LIST_HEADER + items + items + chunk_layout.TRAILER) == \
        [1, 2, 3, 1, 2, 3]
    assert chunk_layout.unpiece(pairs) == pickle.dumps([("a", 1), ("b", 2)], 5)
    assert chunk_layout.unpiece(pairs + b"x") is None and chunk_layout.unpiece(b"\x8e") is None


def test_load_chunks_refuses_other_blobs(tmp_path):
    a = _table(5_000)
    _record(tmp_path / "t.snap", a, {**a, "key1": 0})
    with snap.open_timeline(tmp_path / "t.snap", trust=True) as timeline:
        steps = timeline.run().steps
        value = steps[0].frames[-1].locals["table"]
        later = steps[1].frames[-1].locals["table"]
        layout = chunks_module.payload_chunks(value)
        assert layout is not None and layout.kind == "dict" and len(layout.keys) == 20
        assert layout.payload == value.ref["b"]
        first = chunks_module.load_chunks(value, layout, [0], trust=True)[0]
        assert first[:2] == [("key0", 0), ("key1", 1)]
        changed = chunks_module.load_chunks(later, chunks_module.payload_chunks(later), [0],
                                            trust=True)[0]
        assert changed[:2] == [("key0", 0), ("key1", 0)]
        for bad_layout, positions in [
                (chunks_module.payload_chunks(later), [0]),  # another payload's layout
                (layout, [20]), (layout, [-1]),  # no such chunk
                (replace(layout, keys=(value.preview_key,)), [0])]:  # not a chunk piece
            with pytest.raises(snap.SnapStateError):
                chunks_module.load_chunks(value, bad_layout, positions, trust=True)
