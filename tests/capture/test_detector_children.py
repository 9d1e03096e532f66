"""A value whose own pickle "shows all" (a pydantic model, a pandas frame) still pickles its
*parts* through their own hooks: a part whose ``__getstate__`` leaves out state its preview
shows would make the value's detector blind to that state (the recorded preview stayed the old
one; found by a review of the detectors). Such a value has no detector: it is captured at
every step (``detectors.strict_detector``)."""

from __future__ import annotations

import pandas
import pydantic

import snapstate_capture as snap
from snapstate_capture.options import CaptureOptions
from snapstate_capture.values import capture_value


class Cached:
    """A part that leaves its cache out of its pickle (a common pattern) and shows it."""

    def __init__(self):
        self.hits = 0

    def __getstate__(self):
        return {}

    def __str__(self):
        return f"Cached(hits={self.hits})"


class Holder(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    part: Cached


def _touch(value, part) -> None:
    snap.checkpoint("before")
    part.hits = 5
    snap.checkpoint("after")


def _recorded_and_fresh(snap_path, value, part):
    with snap.record(snap_path, name="parts"):
        _touch(value, part)
    fresh = capture_value(value, name="value", options=CaptureOptions().values).preview
    with snap.open_timeline(snap_path) as timeline:
        after = [s for s in timeline.runs[-1].steps if s.label == "after"][0]
        return after.frames[-1].locals["value"].preview, fresh


def test_a_model_holding_a_part_with_hooks_shows_the_part_as_it_is_now(snap_path):
    part = Cached()
    recorded, fresh = _recorded_and_fresh(snap_path, Holder(part=part), part)
    assert recorded == fresh


def test_a_frame_holding_a_part_with_hooks_shows_the_part_as_it_is_now(snap_path):
    part = Cached()
    recorded, fresh = _recorded_and_fresh(snap_path, pandas.DataFrame({"p": [part]}), part)
    assert recorded == fresh
