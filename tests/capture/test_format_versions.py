"""Format 5 (issue 19): scalars inline in checkpoint frame records, tree manifests for big
containers — and files of format 3 (a preview and a payload blob per scalar, flat manifests)
still read, and are marked 5 when a new run is appended to them."""

from __future__ import annotations

import json
import sqlite3

import snapstate_capture as snap
from snapstate_capture.capture import valuecache
from snapstate_capture.store import blobs
from snapstate_capture.store.sqlite.schema import FORMAT_VERSION


def _work(messages: list, counter: int, title: str) -> None:
    snap.checkpoint("state")


def _messages(n: int) -> list[dict]:
    return [{"role": "user", "content": f"message {i}"} for i in range(n)]


def _user_version(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def _frame_refs(path) -> dict:
    """The innermost frame record's refs of the last step, as stored."""
    with snap.open_timeline(path) as timeline:
        key = timeline.runs[-1].steps[-1].frame_keys[-1]
        return dict(timeline.json_blob(key)["locals"])


def _check_values(path, messages: list) -> None:
    with snap.open_timeline(path, trust=True) as timeline:
        step = timeline.runs[-1].steps[-1]
        local = step.frames[-1].locals
        assert local["counter"].load() == 7 and local["counter"].repr == "7"
        assert local["title"].load() == "plan" and local["title"].type_name == "builtins.str"
        assert local["messages"].load() == messages
        assert local["messages"].preview["len"] == len(messages)


def _record(path, messages: list) -> None:
    with snap.record(path, name="format"):
        _work(messages, 7, "plan")


def test_format_5_keeps_scalars_inline_and_trees_big_manifests(tmp_path):
    path = tmp_path / "new.snap"
    messages = _messages(16 * 64 + 40)  # 67 chunks: a tree of two groups
    _record(path, messages)
    assert _user_version(path) == FORMAT_VERSION == 6  # 6 kept 5's values (durable waits)
    refs = _frame_refs(path)
    assert refs["counter"] == {"v": 7} and refs["title"] == {"v": "plan"}
    conn = sqlite3.connect(path)
    try:
        codec, data = conn.execute("SELECT codec, data FROM blobs WHERE hash=?",
                                   (bytes.fromhex(refs["messages"]["b"]),)).fetchone()
        pieces = blobs.manifest_pieces(blobs.decode_inner(codec, data, len(data) * 64, None))
        nested = [conn.execute("SELECT codec FROM blobs WHERE hash=?", (p,)).fetchone()[0]
                  & blobs.MANIFEST for p in pieces]
    finally:
        conn.close()
    assert len(pieces) == 4 and nested == [0, blobs.MANIFEST, blobs.MANIFEST, 0]
    _check_values(path, messages)


def test_a_format_3_file_reads_and_is_marked_current_when_appended_to(tmp_path, monkeypatch):
    path = tmp_path / "old.snap"
    messages = _messages(16 * 64 + 40)
    with monkeypatch.context() as old_ways:  # capture as format 3 did
        old_ways.setattr(valuecache, "_INLINE", frozenset())
        old_ways.setattr(valuecache, "FANOUT", 10**9)
        _record(path, messages)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=3")
    conn.close()
    refs = _frame_refs(path)
    assert set(refs["counter"]) == {"p", "b", "s"}  # blobs, not inline
    _check_values(path, messages)
    shown = json.dumps(_frame_refs(path))
    assert '"v"' not in shown
    _record(path, messages)  # a current-format run appended to the old file
    assert _user_version(path) == FORMAT_VERSION
    with snap.open_timeline(path, trust=True) as timeline:
        old, new = timeline.runs
        for run in (old, new):
            local = run.steps[-1].frames[-1].locals
            assert local["counter"].load() == 7 and local["messages"].load() == messages
        assert old.steps[-1].frames[-1].locals["counter"].digest != \
            new.steps[-1].frames[-1].locals["counter"].digest
