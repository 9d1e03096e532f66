"""Values told unchanged by identity alone (``detectors.IMMUTABLE``, enum members) must be
values whose capture cannot change while they are the same object: at every step the recorded
preview, payload and identity digest are those a fresh capture makes, and the cache keeps
alive nothing the program let go of (review of f45c011)."""

from __future__ import annotations

import datetime
import enum
import gc
import ipaddress
import pathlib
import weakref

import snapstate_capture as snap
from snapstate_capture.options import CaptureOptions
from snapstate_capture.values import capture_value


class Color(enum.Enum):
    RED = 1

    def __init__(self, value):
        self.hits = 0  # a scalar attribute, set again by the program


class Offset(datetime.tzinfo):
    """A tzinfo of the program's own, with state of its own."""

    def __init__(self):
        self.hours = 1

    def utcoffset(self, dt):
        return datetime.timedelta(hours=self.hours)

    def __repr__(self):
        return f"Offset({self.hours})"


def _fresh(value, name):
    return capture_value(value, name=name, options=CaptureOptions().values).preview


def _locals(values: dict, seen: dict) -> None:
    span, when, color = values["span"], values["when"], values["color"]
    path, net = values["path"], values["net"]
    snap.checkpoint("before")
    span.stop.append(3)
    when.tzinfo.hours = 7
    color.hits = 5
    str(path), hash(path)
    net.broadcast_address  # noqa: B018
    snap.checkpoint("after")
    seen.update({name: _fresh(value, name) for name, value in
                 dict(span=span, when=when, color=color, path=path, net=net).items()})


def test_locals_that_can_change_are_captured_as_they_are_now(snap_path):
    values = {"span": slice(0, [1, 2]),
              "when": datetime.datetime(2024, 1, 1, tzinfo=Offset()),
              "color": Color.RED,
              "path": pathlib.Path("/tmp") / "x",
              "net": ipaddress.ip_network("10.0.0.0/8")}
    seen: dict = {}
    Color.RED.hits = 0
    with snap.record(snap_path, name="identity-locals"):
        _locals(values, seen)
    with snap.open_timeline(snap_path) as timeline:
        after = {step.label: step for step in timeline.runs[-1].steps}["after"]
        held = after.frames[-1].locals
        for name, fresh in seen.items():
            recorded = held[name].preview
            assert recorded.get("identity") == fresh.get("identity"), name
            assert {k: v for k, v in recorded.items() if k != "identity"} == \
                {k: v for k, v in fresh.items() if k != "identity"}, name
    Color.RED.hits = 0


class Resource:
    """Something whose end the program sees."""


def _drop(box: list) -> None:
    span = slice(0, box.pop())
    snap.checkpoint("held")
    span = None  # noqa: F841 - the program lets go of the slice and what it holds
    snap.checkpoint("dropped")


def test_the_cache_keeps_nothing_alive_that_the_program_dropped(snap_path):
    resource = Resource()
    gone = weakref.ref(resource)
    box = [resource]
    del resource
    with snap.record(snap_path, name="drop"):
        _drop(box)
        gc.collect()
        assert gone() is None  # while still recording


def test_an_object_whose_client_is_replaced_is_captured_again(snap_path, captures):
    """The placeholder of a client names the client (its address): a new client of the same
    base URL is a change of the object holding it."""
    import httpx

    class Holder:
        def __init__(self):
            self.client = httpx.Client(base_url="https://api.example.invalid")

    holder = Holder()
    with snap.record(snap_path, name="replaced"):
        snap.checkpoint("first")
        snap.checkpoint("same")
        old, holder.client = holder.client, httpx.Client(base_url="https://api.example.invalid")
        snap.checkpoint("replaced")
    old.close()
    holder.client.close()
    assert captures.count("holder") == 2


def test_a_thread_of_the_programs_own_class_is_digested_by_its_class():
    """Like a thread: its ident and native id differ from one process to the next."""
    import threading

    from snapstate_capture.values.identity import identity

    class Worker(threading.Thread):
        def run(self):
            self.result = 1

    first, second = Worker(), Worker()
    first.start()
    first.join()
    assert identity(first) == identity(second)
