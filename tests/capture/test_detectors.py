"""Change detectors of library values (issue 19: capture costs what changed), on the real
libraries: a pydantic model, a numpy array, a pandas frame, a bytearray are captured again only
when their pickle — which holds everything their preview shows — changed; values that never
change (a datetime, a Decimal, a UUID, an enum member with a scalar value) only when they
are another object; a subclass with hooks or attributes of its own at every step."""

from __future__ import annotations

import datetime
import decimal
import enum
import pathlib
import uuid

import numpy
import pandas
import pydantic

import snapstate_capture as snap
from snapstate_capture.capture.detectors import pickle_shows_all


class Message(pydantic.BaseModel):
    role: str
    content: str
    tags: list[str] = []


class State(pydantic.BaseModel):
    goal: str
    messages: list[Message]
    step: int = 0


class Trimmed(State):
    """Leaves its messages out of its pickle: its pickle cannot tell it unchanged."""

    def __getstate__(self):
        state = super().__getstate__()
        state["__dict__"] = {k: v for k, v in state["__dict__"].items() if k != "messages"}
        return state


def _steps(state: State) -> None:
    snap.checkpoint("same")
    snap.checkpoint("same again")
    state.step += 1
    snap.checkpoint("field set")
    state.messages[0].tags.append("urgent")  # in place, two levels down
    snap.checkpoint("nested edit")


def _shown(path) -> dict[str, str]:
    with snap.open_timeline(path) as timeline:
        return {step.label: step.frames[-1].locals["state"].preview
                for step in timeline.runs[-1].steps}


def test_an_unchanged_model_is_captured_once_and_every_change_is_seen(snap_path, captures):
    state = State(goal="write", messages=[Message(role="user", content="hi")])
    with snap.record(snap_path, name="model"):
        _steps(state)
    # the first step, the field set, the nested edit (held by this frame and _steps', one
    # capture shared by both)
    assert captures.count("state") == 3
    shown = _shown(snap_path)
    assert shown["same"] == shown["same again"]
    assert "step=1" in shown["field set"]["repr"]
    # the edit is deeper than the preview goes; the identity digest has it
    assert shown["nested edit"]["identity"] != shown["field set"]["identity"]


def test_a_model_with_pickling_hooks_of_its_own_is_captured_at_every_step(snap_path, captures):
    assert pickle_shows_all(State) and pickle_shows_all(Message)
    assert not pickle_shows_all(Trimmed)
    state = Trimmed(goal="write", messages=[Message(role="user", content="hi")])
    with snap.record(snap_path, name="trimmed"):
        _steps(state)
    assert captures.count("state") == 2 * 4  # every step, in both frames


class Status(enum.Enum):
    OPEN = "open"


class Bag(enum.Enum):
    ITEMS = []  # noqa: RUF012 - a mutable member value: the member can change


class Stamp(datetime.datetime):
    """A datetime of the program's own: it may carry attributes of its own."""


def _hold(values: dict) -> None:
    snap.checkpoint("first")
    snap.checkpoint("same")
    values["array"][5] = -1.0
    values["frame"].loc[0, "a"] = 99
    values["raw"][0] = ord("Z")
    Bag.ITEMS.value.append(1)
    values["when"] = datetime.datetime(2024, 1, 2)
    snap.checkpoint("edited")


def test_library_values_are_captured_again_only_when_they_changed(snap_path, captures):
    values = {"array": numpy.arange(1000, dtype=float), "raw": bytearray(b"abc"),
              "frame": pandas.DataFrame({"a": range(10), "b": [f"x{i}" for i in range(10)]})}
    array, raw, frame = values["array"], values["raw"], values["frame"]
    when, amount, status, bag, stamp = (datetime.datetime(2024, 1, 1), decimal.Decimal("1.5"),
                                        Status.OPEN, Bag.ITEMS, Stamp(2024, 1, 1))
    path, key = pathlib.Path("/tmp/x"), uuid.UUID(int=7)
    with snap.record(snap_path, name="library"):
        _hold(values)
    assert array[5] == -1 and raw[0] == ord("Z") and frame.loc[0, "a"] == 99  # (held to the end)
    once = ("when", "amount", "status", "key")
    assert [captures.count(name) for name in once] == [1] * len(once)
    # a path's preview shows slots it fills lazily (``_str``, ``_hash``): at every step
    assert captures.count("path") == 3
    # changed in place at the last step, so captured at the first and the last
    assert [captures.count(name) for name in ("array", "raw", "frame")] == [2, 2, 2]
    # a member with a mutable value and a subclass of datetime: at every step
    assert captures.count("bag") == 3 and captures.count("stamp") == 3
    with snap.open_timeline(snap_path) as timeline:
        steps = {step.label: step.frames[-2].locals for step in timeline.runs[-1].steps}
        assert "-1." in str(steps["edited"]["array"].preview)
        assert steps["first"]["bag"].repr != steps["edited"]["bag"].repr  # [] then [1]
    del bag, stamp, when, amount, status, path, key  # held by this frame to the end
