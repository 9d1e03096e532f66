"""Capture writes JSON with its own encoder, never through ``json.dumps``, which a program may
patch while it is recorded (``store/hashing.canonical_json``, ``store/writer``): a test that
mocked ``json.dumps`` and counted its calls saw every preview and step SnapState wrote."""

from __future__ import annotations

import json
from unittest import mock

import pytest

import snapstate_capture as snap
from snapstate_capture.store.hashing import canonical_json

HERE = __file__


class Box:
    def __init__(self):
        self.items = [1, 2]


def send(payload):
    return json.dumps(payload)


@pytest.mark.parametrize("trace", [None, "calls", "lines"])
def test_a_mocked_json_dumps_sees_only_the_programs_calls(tmp_path, trace):
    with snap.record(tmp_path / "t.snap", trace=trace, include=[HERE]):
        with mock.patch("json.dumps", return_value="{}") as dumps:
            box = Box()
            snap.checkpoint("before", box=box)
            sent = send({"items": box.items})
            snap.checkpoint("after", sent=sent)
    assert sent == "{}"
    assert dumps.call_count == 1
    with snap.open_timeline(tmp_path / "t.snap") as timeline:
        run = timeline.runs[-1]
        assert [s.label for s in run.steps if s.kind == "checkpoint"] == ["before", "after"]


def test_canonical_json_is_the_text_json_dumps_makes():
    value = {"b": [1, 2.5, float("inf")], "a": "é", "c": {"z": None, "y": True}}
    assert canonical_json(value) == json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
        allow_nan=True).encode("utf-8")
