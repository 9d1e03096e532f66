"""In a traced run, explicit steps and traced steps capture a value once between them
(``capture/lent_captures.py``): the stored steps are the ones the two captures would have
made apart, every value they name loads as the program had it, and a capture is lent only
when nothing in it depends on where it was found or on a loadability verdict the tracer
skipped."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field

import snapstate_capture as snap
from snapstate_capture.capture import lent_captures
from snapstate_capture.capture.lent_captures import LentCaptures
from snapstate_capture.store.hashing import content_hash
from snapstate_capture.tracing.value_encoder import ValueEncoder

HERE = __file__
SEEN: list = []
#: A preview's JSON with no address in it.
PREVIEW = b'{"repr":"Note(text=\'x\', weight=1.0)","type":"Note"}'
#: The recorded program's functions (the test's own frames are on the stack too).
PROGRAM = {"work", "annotate", "review"}


@dataclass
class Note:
    text: str
    weight: float = 1.0


@dataclass
class Task:
    title: str
    notes: list = field(default_factory=list)


def annotate(task, text):
    task.notes.append(Note(text, weight=len(text) / 10))
    return task


def review(task):
    return len(task.notes)


def work(rounds):
    task = Task("roofs")
    for i in range(rounds):
        annotate(task, f"note {i}")
        SEEN.append(copy.deepcopy(task))
        snap.checkpoint()  # the tracer captured this task at annotate's return
        review(task)       # ... and takes the checkpoint's capture at this call
    return task


def _record(path, monkeypatch, lend: bool) -> dict[str, int]:
    """Record ``work(6)`` traced; with ``lend`` off, each kind of step captures on its own.
    Returns how many captures were lent each way."""
    counts = {"lent": 0, "offered": 0}
    lend_of, offer_of = LentCaptures.lend, ValueEncoder.take_offers

    def lend_counted(self, value, detector, judged):
        ref = lend_of(self, value, detector, judged) if lend else None
        counts["lent"] += ref is not None
        return ref

    def offer_counted(encoder, captures):
        if lend:
            counts["offered"] += len(captures)
            offer_of(encoder, captures)

    monkeypatch.setattr(LentCaptures, "lend", lend_counted)
    monkeypatch.setattr(ValueEncoder, "take_offers", offer_counted)
    SEEN.clear()
    with snap.record(path, trace="calls", include=[HERE]):
        work(6)
    monkeypatch.undo()
    return counts


def _stored(path) -> list[tuple]:
    with snap.open_timeline(path) as timeline:
        return [(step.kind, step.function,
                 [sorted((name, v.preview_key, v.payload_key, v.serializer, v.is_placeholder)
                         for name, v in frame.locals.items())
                  for frame in step.frames if frame.function in PROGRAM],
                 sorted((name, v.preview_key, v.payload_key) for name, v in step.extra.items()))
                for step in timeline.runs[-1].steps]


def test_both_kinds_of_steps_store_what_they_stored_apart(tmp_path, monkeypatch):
    apart = _record(tmp_path / "apart.snap", monkeypatch, lend=False)
    shared = _record(tmp_path / "shared.snap", monkeypatch, lend=True)
    assert apart == {"lent": 0, "offered": 0}
    assert shared["lent"] >= 6 and shared["offered"] >= 6  # each way, at every round
    assert _stored(tmp_path / "shared.snap") == _stored(tmp_path / "apart.snap")


def test_every_lent_value_loads_as_the_program_had_it(tmp_path, monkeypatch):
    counts = _record(tmp_path / "run.snap", monkeypatch, lend=True)
    assert counts["lent"] and counts["offered"]
    with snap.open_timeline(tmp_path / "run.snap", trust=True) as timeline:
        steps = timeline.runs[-1].steps
        at_checkpoints = [s.frames[-1].locals["task"].load() for s in steps
                          if s.kind == "checkpoint"]
        at_reviews = [s.frames[-1].locals["task"].load() for s in steps
                      if s.kind == "call" and s.function == "review"]
    assert at_checkpoints == SEEN and at_reviews == SEEN


def test_a_capture_the_judge_refuses_is_not_lent_to_a_judging_borrower():
    lent = LentCaptures()
    note = Note("x")
    detector = pickle.dumps(note, 5)
    digest = content_hash(detector).hex()
    ref = ("preview-key", digest, "pickle")  # its payload: the very pickle hashed
    lent.keep(note, digest, ref, b"cos\npath_not_there_xyz\n.", PREVIEW)  # a missing global
    assert lent.lend(note, detector, judged=True) is None
    assert lent.lend(note, detector, judged=False) == {"p": "preview-key", "b": digest,
                                                        "s": "pickle"}
    lent.keep(note, digest, ref, detector, PREVIEW)  # a payload that loads
    assert lent.lend(note, detector, judged=True) == {"p": "preview-key", "b": digest,
                                                       "s": "pickle"}


def _kept(lent, value, preview=None):
    detector = pickle.dumps(value, 5)
    digest = content_hash(detector).hex()
    lent.keep(value, digest, ("p", digest, "pickle"), detector, preview or PREVIEW)
    return detector


def test_a_capture_is_lent_for_the_same_object_unchanged_only():
    lent = LentCaptures()
    note, twin = Note("x"), Note("x")  # equal pickles, two objects (two addresses)
    detector = _kept(lent, note)
    assert lent.lend(note, detector, judged=True) is not None
    assert lent.lend(twin, detector, judged=True) is None
    note.weight = 2.0  # changed since the tracer captured it
    assert lent.lend(note, pickle.dumps(note, 5), judged=True) is None
    rows = [Note("a")]  # no weak reference: by id and pickle
    rows_detector = _kept(lent, rows)
    assert lent.lend(rows, rows_detector, judged=True)["p"] == "p"
    assert lent.lend([Note("a")], rows_detector, judged=True) is None


class Cached:
    """Pickles without its cache, which its repr shows."""

    def __init__(self):
        self.n, self.cache = 1, 0

    def __getstate__(self):
        return {"n": self.n}


def test_only_captures_whose_preview_is_all_in_the_pickle_are_kept():
    lent = LentCaptures()
    assert lent_captures.transparent(Task("t", [Note("a")]), PREVIEW)
    with_address = b'{"repr":"Task(title=<Foo object at 0x7f00aa>)","type":"Task"}'
    assert not lent_captures.transparent(Task("t"), with_address)
    assert not lent_captures.transparent(Task("t", [Cached()]), PREVIEW)  # hides state
    task = Task("t")
    detector = pickle.dumps(task, 5)
    digest = content_hash(detector).hex()
    lent.keep(task, digest, ("p", digest, "pickle"), detector, with_address)
    lent.keep(task, digest, ("p", "another-state", "pickle"), detector, PREVIEW)  # raced
    assert len(lent) == 0


def test_only_captures_that_depend_on_the_value_alone_are_kept():
    assert lent_captures.clean({"type": "Note", "repr": "Note(...)"}, None)
    assert not lent_captures.clean({"type": "Note", "placeholders": [["a.b", "lock"]]}, None)
    assert not lent_captures.clean({"type": "Note", "redacted_parts": ["token"]}, None)
    assert not lent_captures.clean({"type": "Note"}, "x: not loadable")
    lent = LentCaptures()
    note = Note("x")
    lent.keep(note, "a" * 32, ("p", None, None), b"", PREVIEW)  # no payload: nothing to lend
    lent.keep(note, "b" * 32, ("p", "b" * 32, "pickle"),
              b"x" * (lent_captures.PAYLOAD_BYTES + 1), PREVIEW)
    assert len(lent) == 0  # too big to keep for judging


def test_what_is_kept_for_lending_stays_bounded_in_bytes(monkeypatch):
    monkeypatch.setattr(lent_captures, "KEPT_BYTES", 3 * 1024)
    lent = LentCaptures()
    notes = [Note("x" * 1000, weight=i) for i in range(10)]
    for note in notes:
        _kept(lent, note)
    assert 1 <= len(lent) <= 3  # started again whenever the next payload would pass the bound
    assert lent.lend(notes[-1], pickle.dumps(notes[-1], 5), judged=False) is not None
