"""Reading a cold step is cheap: a delta chain comes back in one query, and the preview check's
fast path for leaves gives what the careful path gives (issue 7: any step's locals in <= 5 ms)."""

from __future__ import annotations

import os

import pytest

import snapstate_capture as snap
from snapstate_capture.store import blobs, sanitize
from snapstate_capture.store.sqlite.reading import SQLiteReadEngine


def test_a_long_delta_chain_is_read_in_one_query_per_blob(tmp_path, monkeypatch):
    path = tmp_path / "chain.snap"
    text = os.urandom(900).hex()
    expected = []
    with snap.record(path, name="chain"):
        for i in range(30):
            note = f"{text} version {i}"  # each a delta against the one before
            snap.checkpoint()
            expected.append(note)
    queries = []
    original = SQLiteReadEngine.query

    def counting(self, sql, params=()):
        queries.append(sql)
        return original(self, sql, params)

    monkeypatch.setattr(SQLiteReadEngine, "query", counting)
    with snap.open_timeline(path, trust=True) as timeline:
        steps = timeline.runs[-1].steps
        note = steps[len(steps) - 1].frames[-1].locals["note"]
        key = bytes.fromhex(note.payload_key)
        depth = 0
        for _ in range(64):  # how deep the chain under the last payload is
            codec, _, data = timeline._fetch_blob(key)
            key = blobs.delta_base(codec, data)
            if key is None:
                break
            depth += 1
        assert depth >= 10  # a real chain, or the test proves nothing
        queries.clear()
        assert note.load() == expected[-1]
        assert len(queries) <= 2  # the payload's row and its bases: one query (+ slack)
        queries.clear()
        assert note.preview["repr"].startswith(repr(expected[-1])[:40])
        assert len(queries) <= 3  # size check down the chain, then the rows: one query each


@pytest.mark.parametrize("node", [
    {"len": 5, "repr": "'hello'", "type": "builtins.str"},
    {"repr": "3", "type": "builtins.int"},
    {"len": True, "repr": "'x'", "type": "builtins.str"},      # a bool is not a length
    {"len": 1.5, "repr": "'x'", "type": "builtins.str"},
    {"repr": 3, "type": "builtins.int"},                        # not a string: repaired
    {"repr": "x", "type": ["list"]},
    {"repr": "x"},                                              # no type
])
def test_leaf_fast_path_gives_what_the_careful_path_gives(node, monkeypatch):
    fast = sanitize.preview({"type": "builtins.list", "repr": "[…]", "children": [["[0]", node]]})
    monkeypatch.setattr(sanitize, "_LEAF", frozenset())  # the careful path for every node
    careful = sanitize.preview({"type": "builtins.list", "repr": "[…]",
                                "children": [["[0]", node]]})
    assert fast == careful
    assert list(fast["children"][0][1]) == list(careful["children"][0][1])  # same key order


def test_the_writer_stores_blobs_under_the_capture_side_key_and_reads_check_it(tmp_path):
    from snapstate_capture.store.hashing import content_hash
    from snapstate_capture.store.step_record import StepRecord
    from snapstate_capture.store.writer import TimelineWriter

    path = tmp_path / "keys.snap"
    writer = TimelineWriter(path)
    run = writer.begin_run(name="keys", entry={}, env={})
    good, bad = b'{"x": 1}', b'{"x": 2}'
    wrong = content_hash(good).hex()  # a capture-side bug: the key of other bytes
    right = content_hash(bad + b" ").hex()
    writer.append_step(run, StepRecord(
        kind="checkpoint", label=None, wall=0.0, mono=0.0, thread="t", task=None,
        function=None, filename=None, lineno=None, depth=0, frames=[],
        blobs={wrong: bad, right: bad + b" "}))
    writer.close()
    with snap.open_timeline(path) as timeline:
        assert timeline.blob(right) == bad + b" "
        with pytest.raises(snap.IntegrityError, match="corrupt"):
            timeline.blob(wrong)
