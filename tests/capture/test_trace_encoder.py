"""The traced-step encoder (``tracing/value_encoder.ValueEncoder``) captures an object met twice in one
trace event once, and captures it again in the next event, where the program may have changed
it."""

from __future__ import annotations

from snapstate_capture.options import CaptureOptions
from snapstate_capture.tracing.value_encoder import ValueEncoder


class Box:
    def __init__(self, items):
        self.items = items


def _encoder():
    items: list = []
    return ValueEncoder(CaptureOptions(), items.append), items


def test_an_object_met_twice_in_one_event_is_captured_once():
    encoder, items = _encoder()
    box = Box([1, 2])
    assert encoder.begin_event()
    first = encoder.capture(box, "self")
    sent = len(items)
    box.items.append(3)  # (the program does not run inside an event: this only shows reuse)
    assert encoder.capture(box, "self") == first
    assert len(items) == sent
    assert encoder.capture(box, "other") != first  # another name: captured on its own
    encoder.end_event()
    assert encoder.capture(box, "self") != first  # the next event sees the change


def test_one_event_at_a_time_and_captures_outside_events_are_fresh():
    encoder, _ = _encoder()
    box = Box([1])
    assert encoder.begin_event()
    assert not encoder.begin_event()  # an event is open (another thread's): no memo of its own
    encoder.end_event()
    first = encoder.capture(box, "self")
    box.items.append(2)
    assert encoder.capture(box, "self") != first
