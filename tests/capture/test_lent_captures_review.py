"""Lent captures (``capture/lent_captures.py``) where an adversarial review of the first
versions (948e56c, 2e9b6ae) found a traced recording storing something other than what the
program held at the step, and other than the same recording with lending off: a nested object
replaced by an equal-pickling one at another address, nested state its pickle leaves out, a
capture offered to the tracer standing for another object, a capture raced by another thread.
Each test records with lending on and off and compares with the program's own repr there."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import snapstate_capture as snap
import snapstate_capture.tracing.value_encoder as encoder_module
from snapstate_capture.capture.lent_captures import LentCaptures
from snapstate_capture.tracing.value_encoder import ValueEncoder

HERE = __file__
SEEN: list = []


class Foo:  # a default repr: its address
    pass


@dataclass
class Box:
    x: object


class Hidden:
    def __init__(self):
        self.n, self.cache = 0, 0

    def __getstate__(self):
        return {"n": self.n}

    def __setstate__(self, state):
        self.n, self.cache = state["n"], 0

    def __repr__(self):
        return f"Hidden(n={self.n}, cache={self.cache})"


@dataclass
class Job:
    n: int
    state: str


def look(value):
    return value is not None


def _record(path, monkeypatch, program, lend: bool):
    if not lend:
        monkeypatch.setattr(LentCaptures, "lend", lambda self, value, detector, judged: None)
        monkeypatch.setattr(ValueEncoder, "take_offers", lambda *a: None)
    SEEN.clear()
    with snap.record(path, trace="calls", include=[HERE]):
        program()
    monkeypatch.undo()
    return list(SEEN)


def _reprs(path, name, kind):
    with snap.open_timeline(path) as timeline:
        return [next(f.locals[name].repr for f in reversed(s.frames) if name in f.locals)
                for s in timeline.runs[-1].steps if s.kind == kind
                and any(name in f.locals for f in s.frames)]


def _check(tmp_path, monkeypatch, program, name, kind):
    for lend in (False, True):
        path = tmp_path / f"{program.__name__}-{lend}.snap"
        seen = _record(path, monkeypatch, program, lend)
        assert _reprs(path, name, kind) == seen, f"lend={lend}"


def nested_replaced():
    box = Box(Foo())
    look(box)            # the tracer captures box (and keeps it to lend)
    old = box.x
    box.x = Foo()        # same pickle, another address in the preview
    SEEN.append(repr(box))
    snap.checkpoint()    # lent the tracer's capture: shows old's address
    return old


def nested_hidden_state():
    box = Box(Hidden())
    look(box)
    box.x.cache = 5      # left out of the pickle, shown by the repr
    SEEN.append(repr(box))
    snap.checkpoint()


def test_a_lent_capture_shows_a_nested_object_replaced_since(tmp_path, monkeypatch):
    _check(tmp_path, monkeypatch, nested_replaced, "box", "checkpoint")


def test_a_lent_capture_shows_nested_state_changed_since(tmp_path, monkeypatch):
    _check(tmp_path, monkeypatch, nested_hidden_state, "box", "checkpoint")


KEEP: list = []


def _checkpointed():
    first = Box(Foo())
    KEEP.append(first.x)
    snap.checkpoint()    # the value cache's capture of first is offered to the tracer
    first.x = 0          # the tracer never sees that pickle itself


def offered_to_another_object():
    _checkpointed()
    other = Box(Foo())   # another object, equal pickle, another address
    SEEN.append(repr(other))
    look(other)


def test_an_offered_capture_stands_for_another_object(tmp_path, monkeypatch):
    _check(tmp_path, monkeypatch, offered_to_another_object, "other", "call")


def thread_switch_in_capture():
    """A thread switch between the tracer's digest pickle and its capture_value (forced by a
    hook where the GIL could switch): the kept (digest, ref) pair disagree."""
    digest_done, mutated, captured, restored, looked, created = (
        threading.Event() for _ in range(6))
    shared: dict = {}
    original = encoder_module.capture_value

    def hooked(value, *args, **kwargs):
        if type(value) is Job and not digest_done.is_set():
            digest_done.set()
            mutated.wait(5)
            try:
                return original(value, *args, **kwargs)
            finally:
                captured.set()
                restored.wait(5)
        return original(value, *args, **kwargs)

    def tracer_side():
        created.wait(5)
        look(shared["job"])
        looked.set()

    def worker():
        job = shared["job"] = Job(1, "idle")
        created.set()
        digest_done.wait(5)
        job.state = "running"
        mutated.set()
        captured.wait(5)
        job.state = "idle"
        restored.set()
        looked.wait(5)
        SEEN.append(repr(job))
        snap.checkpoint()

    encoder_module.capture_value = hooked
    try:
        threads = [threading.Thread(target=worker), threading.Thread(target=tracer_side)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        encoder_module.capture_value = original


def test_a_capture_raced_by_another_thread_is_not_lent(tmp_path, monkeypatch):
    _check(tmp_path, monkeypatch, thread_switch_in_capture, "job", "checkpoint")
