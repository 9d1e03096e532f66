"""A value met in several frames of one stack is captured once per content (issue 19): the
refs are those a capture of each slot makes, the file reads back the same values, and a
capture whose texts name its variable (a redacted part) stays the slot's own."""

from __future__ import annotations

import dataclasses

import pytest

import snapstate_capture as snap
from snapstate_capture.capture import valuecache


@dataclasses.dataclass
class Task:
    number: int
    title: str
    status: str = "todo"
    notes: list[str] = dataclasses.field(default_factory=list)


def _agent(steps: int) -> list[Task]:
    tasks = [Task(i, f"section {i}") for i in range(5)]
    for step in range(steps):
        _work(tasks, step)
        snap.checkpoint("after", done=tasks[step % 5])
    return tasks


def _work(tasks: list[Task], step: int) -> None:
    task = tasks[step % 5]
    task.status = "done" if task.status == "todo" else "todo"
    task.notes.append(f"note {step}")
    _report(tasks, task)


def _report(items: list[Task], current: Task) -> None:
    snap.checkpoint("report")


def _record(path) -> list[list[str]]:
    """Record ``_agent``; return each step's frame-record keys below this function's own
    frame (whose ``path`` differs between recordings)."""
    with snap.record(path, name="agent"):
        _agent(6)
    with snap.open_timeline(path) as timeline:
        return [[frame.key for frame in step.frames[1:]] for step in timeline.runs[-1].steps]


@pytest.fixture
def captures(monkeypatch):
    """The names of the values captured whole (``capture_value`` runs) while the test runs."""
    names: list[str | None] = []
    original = valuecache.capture_value

    def counting(value, *, name=None, **kwargs):
        names.append(name)
        return original(value, name=name, **kwargs)

    monkeypatch.setattr(valuecache, "capture_value", counting)
    return names


def test_a_value_handed_down_the_stack_is_captured_once_with_the_refs_of_its_own_capture(
        tmp_path, monkeypatch, captures):
    with monkeypatch.context() as unshared:
        unshared.setattr(valuecache.SharedCaptures, "get", lambda self, cls, detector: None)
        own = _record(tmp_path / "own.snap")
    own_captures = list(captures)
    captures.clear()
    shared = _record(tmp_path / "shared.snap")
    # The same frame records, byte for byte: every ref is the one the slot's capture made.
    assert shared == own
    # ``tasks`` is ``items`` one frame down: each change is captured once, not once a frame.
    assert own_captures.count("items") >= 6
    assert captures.count("items") == 0
    assert len(captures) < len(own_captures)
    with snap.open_timeline(tmp_path / "shared.snap") as timeline:
        step = timeline.runs[-1].steps[-2]
        assert step.label == "report"
        frames = {frame.function.rsplit(".", 1)[-1]: frame for frame in step.frames}
        tasks = frames["_agent"].locals["tasks"].load(trust=True)
        items = frames["_report"].locals["items"].load(trust=True)
        assert tasks == items and tasks[0].notes == ["note 0", "note 5"]
        assert frames["_report"].locals["current"].load(trust=True) == tasks[0]


def _holder(settings: dict) -> None:
    _inner(settings)


def _inner(config: dict) -> None:
    snap.checkpoint("secret")


def test_a_capture_that_names_its_variable_is_not_shared(snap_path):
    secret = "sk-" + "7" * 30
    with snap.record(snap_path, name="named"):
        _holder({"api_key": secret, "model": "small"})
    with snap.open_timeline(snap_path) as timeline:
        step = timeline.runs[-1].steps[-1]
        frames = {frame.function.rsplit(".", 1)[-1]: frame for frame in step.frames}
        outer = frames["_holder"].locals["settings"]
        inner = frames["_inner"].locals["config"]
        assert secret not in repr(outer.preview) and secret not in repr(inner.preview)
        # each redaction names the variable it was found under, not the other frame's
        assert "settings" in repr(outer.preview.get("redacted_parts"))
        assert "config" in repr(inner.preview.get("redacted_parts"))


def test_shared_captures_are_bounded_and_forgotten_with_the_slots():
    shared = valuecache.SharedCaptures()
    ref = {"p": "a" * 32}
    shared.put(list, b"x" * 10, ref)
    assert shared.get(list, b"x" * 10) is ref
    assert shared.get(dict, b"x" * 10) is None  # another class: another value
    for number in range(valuecache.SHARED_ENTRIES):
        shared.put(list, number.to_bytes(4, "little"), ref)
    assert shared.get(list, b"x" * 10) is None  # full: started again
    assert len(shared._entries) <= valuecache.SHARED_ENTRIES
    shared.put(list, b"y" * (valuecache.SHARED_BYTES + 1), ref)
    assert shared.get(list, b"y" * (valuecache.SHARED_BYTES + 1)) is None  # too big to keep
