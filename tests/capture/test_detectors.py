"""Change detectors of library models (issue 19: capture costs what changed): a pydantic model
is captured again only when its pickle — which holds every field its preview shows — changed,
on the real pydantic; a subclass with pickling hooks of its own is captured at every step."""

from __future__ import annotations

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
