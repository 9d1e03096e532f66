"""Storage grows with what changed: an append costs bytes proportional to the element, a changed
key of a big dict costs about that key, and chunked values read back exactly."""

from __future__ import annotations

import os
import sqlite3

import snapstate_capture as snap
from snapstate_capture.values import capture_value


def _stored_bytes(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT coalesce(sum(length(data)), 0) FROM blobs").fetchone()[0]
    finally:
        conn.close()


def _message(i: int) -> dict:
    # Incompressible content, so stored bytes track the element's size.
    return {"role": "user", "content": os.urandom(400).hex()}  # 800 characters


def _record_appends(path, start: int, steps: int) -> None:
    messages = [_message(i) for i in range(start)]
    with snap.record(path, name="appends"):
        for i in range(steps):
            messages.append(_message(start + i))
            snap.checkpoint()


def _growth_per_step(tmp_path, start: int, tag: str) -> float:
    short, long = tmp_path / f"{tag}-short.snap", tmp_path / f"{tag}-long.snap"
    _record_appends(short, start, 5)
    _record_appends(long, start, 25)
    return (_stored_bytes(long) - _stored_bytes(short)) / 20


def test_append_costs_bytes_proportional_to_the_element(tmp_path):
    element = len(_message(0)["content"]) // 2  # 400 random bytes, hex: compresses to ~half
    small = _growth_per_step(tmp_path, 400, "small")
    big = _growth_per_step(tmp_path, 1600, "big")
    container = 1600 * element * 2
    assert small < 4 * element, small
    assert big < 4 * element, big
    assert big < small * 1.5 + 200  # four times the container, about the same cost per append
    assert big < container / 200


def test_changing_one_key_of_a_big_dict_costs_about_that_key(tmp_path):
    path = tmp_path / "dict.snap"
    table = {f"key{i}": os.urandom(30).hex() for i in range(3000)}
    with snap.record(path, name="dict"):
        snap.checkpoint()
        first = _stored_bytes(path)
        for i in range(20):
            table[f"key{i * 97}"] = os.urandom(30).hex()
            snap.checkpoint()
    per_step = (_stored_bytes(path) - first) / 20
    assert per_step < 2500, per_step  # the dict's pickle is ~250 kB
    with snap.open_timeline(path, trust=True) as timeline:
        assert timeline.runs[-1].steps[-1].frames[-1].locals["table"].load() == table


def test_chunked_values_load_back_exactly_after_in_place_changes(snap_path):
    messages = [{"role": "user", "content": f"message {i}"} for i in range(300)]
    table = {f"k{i}": i for i in range(700)}
    expected = []
    exact = snap.CaptureOptions(deep_check_chunks=None)  # every chunk checked at every step
    with snap.record(snap_path, name="chunks", options=exact):
        for step in range(6):
            messages.append({"role": "assistant", "content": f"reply {step}"})
            messages[3]["content"] = f"edited at {step}"  # in place, inside an old chunk
            table[f"k{step * 50}"] = -step
            if step == 4:
                del table["k1"]
            snap.checkpoint()
            expected.append(([dict(m) for m in messages], dict(table)))
    with snap.open_timeline(snap_path, trust=True) as timeline:
        for step, (want_messages, want_table) in zip(timeline.runs[-1].steps, expected):
            local = step.frames[-1].locals
            assert local["messages"].load() == want_messages
            assert local["table"].load() == want_table
            assert local["messages"].preview["len"] == len(want_messages)


def test_reused_preview_equals_a_fresh_one(snap_path):
    options = snap.CaptureOptions()
    items = [{"n": i, "text": "x" * (i % 7)} for i in range(120)]
    seen = []
    with snap.record(snap_path, name="previews", options=options):
        for i in range(5):
            items.append({"n": 1000 + i, "text": "new"})
            snap.checkpoint()
            seen.append(capture_value(items, name="items", options=options.values,
                                      payloads=False).preview)
    with snap.open_timeline(snap_path) as timeline:
        for step, fresh in zip(timeline.runs[-1].steps, seen):
            # chunked containers carry no identity digest (docs/value-identity.md)
            fresh = {k: v for k, v in fresh.items() if k != "identity"}
            assert step.frames[-1].locals["items"].preview == fresh


def test_secret_keys_inside_a_big_list_stay_redacted_in_the_payload(snap_path):
    rows = [{"user": f"u{i}", "api_key": f"sk-{i:040d}"} for i in range(200)]
    with snap.record(snap_path, name="secrets"):
        snap.checkpoint()
    with snap.open_timeline(snap_path, trust=True) as timeline:
        loaded = timeline.runs[-1].steps[0].frames[-1].locals["rows"].load()
    assert len(loaded) == 200
    assert all("sk-" not in repr(row["api_key"]) for row in loaded)
