"""The shortcuts of call tracing's hot path (``CallFrame._snapshot_changes``, ``Tracer._snapshot``)
store exactly what the full checks store: a caller's list filled in place by its callee shows
at the caller's next call step, a scalar rebound to an equal value of another type is stored
again, a secret-named number is redacted at every step, and a name deleted shows as gone."""

from __future__ import annotations

import itertools

import snapstate_capture as snap

HERE = __file__


def peek():
    return None


def _at_peeks(path, name, caller):
    """The repr of ``name`` in frame ``caller`` at each call step of ``peek``."""
    with snap.open_timeline(path) as timeline:
        return [frame.locals[name].repr
                for step in timeline.runs[-1].steps if step.kind == "call"
                and step.function == "peek"
                for frame in step.frames if frame.function == caller and name in frame.locals]


def fill(items, n):
    items.append(n)  # the caller's own list, changed in place: no rebinding in the caller
    return None


def fills_through_a_callee():
    items = []
    fill(items, 1)
    peek()
    fill(items, 2)
    peek()
    return None


def test_a_callees_edit_of_its_callers_list_shows_at_the_callers_next_call(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        fills_through_a_callee()
    assert _at_peeks(snap_path, "items", "fills_through_a_callee") == ["[1]", "[1, 2]"]


def retypes():
    x = 1
    peek()
    x = True  # == 1, another type
    peek()
    x = 1.0  # == True, another type again
    peek()
    return None


def retypes_its_argument(x):
    x = x == 1  # 1 at the call, True at the return
    return None


def test_a_scalar_rebound_to_an_equal_value_of_another_type_is_stored(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        retypes()
        retypes_its_argument(1)
    assert _at_peeks(snap_path, "x", "retypes") == ["1", "True", "1.0"]
    with snap.open_timeline(snap_path) as timeline:
        shown = {step.kind: step.frames[-1].locals["x"].repr
                 for step in timeline.runs[-1].steps if step.function == "retypes_its_argument"}
    assert shown == {"call": "1", "return": "True"}


def uses_a_pin(password):
    password = password + 1
    peek()
    return None


def holds_a_pin():
    password = 4321
    uses_a_pin(password)
    password = 4322
    peek()
    return None


def test_a_secret_named_number_is_redacted_at_every_step(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        holds_a_pin()
    seen = set()
    with snap.open_timeline(snap_path) as timeline:
        for step in timeline.runs[-1].steps:
            for frame in step.frames:
                if "password" in frame.locals:
                    value = frame.locals["password"]
                    seen.add((step.kind, frame.function, value.repr, value.is_redacted))
    assert {kind for kind, *_ in seen} == {"call", "return"}
    assert {function for _, function, *_ in seen} == {"holds_a_pin", "uses_a_pin"}
    assert {(shown, redacted) for *_, shown, redacted in seen} == {("<redacted>", True)}


def deletes():
    gone = [1, 2]
    kept = 3
    peek()
    del gone
    peek()
    return kept


def test_a_deleted_local_is_gone_at_the_next_call(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        deletes()
    with snap.open_timeline(snap_path) as timeline:
        names = [sorted(frame.locals) for step in timeline.runs[-1].steps
                 if step.kind == "call" and step.function == "peek"
                 for frame in step.frames if frame.function == "deletes"]
    assert names == [["gone", "kept"], ["kept"]]


def _ask(question):
    return question


def _holding_values(stamps):
    when, status = stamps
    for question in ("a", "b", "c"):
        _ask(question)  # each call catches this frame up
    return when, status


def test_a_caller_holding_values_that_never_change_does_not_encode_them_again(tmp_path,
                                                                              monkeypatch):
    """A date or a Decimal a caller holds is the same content while it is the same object:
    the catch-up at each call does not copy and hash it again."""
    import datetime
    import decimal

    from snapstate_capture.tracing import value_encoder

    encoded: list[str | None] = []
    original = value_encoder.ValueEncoder.capture

    def counting(self, value, name, *args, **kwargs):
        encoded.append(name)
        return original(self, value, name, *args, **kwargs)

    monkeypatch.setattr(value_encoder.ValueEncoder, "capture", counting)
    with snap.record(tmp_path / "t.snap", trace="calls", include=[__file__]):
        _holding_values((datetime.date(2026, 12, 6), decimal.Decimal("1.5")))
    assert encoded.count("when") == 1 and encoded.count("status") == 1


def _holding_live(lock, client):
    for step in range(4):
        if step == 2:
            lock.acquire()
        _ask(step)  # each call catches this frame up
        if step == 2:
            lock.release()
    return client


def test_a_caller_holding_a_lock_and_a_client_captures_them_again_only_when_shown_otherwise(
        tmp_path, traced_captures):
    """A live object or a client is captured as its preview alone: at each call's catch-up it
    costs a preview, and a lock taken is captured (and shown) at the call it is taken."""
    import threading

    import httpx

    captured = traced_captures
    client = httpx.Client(base_url="https://api.example.invalid")
    path = tmp_path / "t.snap"
    with snap.record(path, trace="calls", include=[__file__]):
        _holding_live(threading.Lock(), client)
    client.close()
    assert captured.count("client") == 1
    assert captured.count("lock") == 2  # unlocked, locked (unlocked again is the first's ref)
    with snap.open_timeline(path) as timeline:
        shown = [step.frames[-2].locals["lock"].repr for step in timeline.runs[-1].steps
                 if step.kind == "call" and step.function == "_ask"]
    assert len(shown) == 4 and "<locked" in shown[2] and "unlocked" in shown[1]


def _consume(items):
    return items


def _two_generators(rows, cols):
    _consume(((r, r + 1) for r in rows))  # freed at once: the next may take its address
    _consume(((c, c * 2) for c in cols))


def test_two_generator_expressions_of_one_function_are_told_apart(tmp_path):
    """Same type, same qualified name, same repr when one takes the other's address: their
    code tells them apart, as their identity digests do."""
    path = tmp_path / "t.snap"
    with snap.record(path, trace="calls", include=[__file__]):
        for _ in range(5):
            _two_generators([1, 2], [3, 4])
    with snap.open_timeline(path) as timeline:
        shown = [(step.frames[-1].locals["items"].repr,
                  step.frames[-1].locals["items"].preview.get("identity"))
                 for step in timeline.runs[-1].steps
                 if step.kind == "call" and step.function == "_consume"]
    assert len(shown) == 10
    first, second = shown[0::2], shown[1::2]
    assert any(a[0] == b[0] for a, b in zip(first, second))  # an address taken in turn
    assert all(a[1] != b[1] for a, b in zip(first, second))  # yet never the same value


def sieve_like(n):
    """A generator over a big buffer it edits between some of its yields (more-itertools'
    ``sieve``): resumed again and again, the buffer is compared, not captured, when unchanged."""
    data = bytearray(n)
    for round_ in range(3):
        yield round_
        yield round_  # nothing changed since the last resume
        data[round_] = 7  # changed in place: the next step must show it
    yield len(data)


def test_a_big_buffer_changed_in_place_between_resumes_shows_and_an_unchanged_one_is_not_stored_again(
        snap_path, monkeypatch):
    from snapstate_capture.tracing import value_encoder

    encoded: list[bytes] = []
    original = value_encoder.ValueEncoder._capture

    def counting(self, value, name):
        if name == "data":
            encoded.append(bytes(value[:3]))
        return original(self, value, name)

    monkeypatch.setattr(value_encoder.ValueEncoder, "_capture", counting)
    with snap.record(snap_path, trace="calls", include=[HERE]):
        assert list(sieve_like(8192)) == [0, 0, 1, 1, 2, 2, 8192]
    # captured at the start and after each of the three edits, not at every resume
    assert encoded == [b"\x00\x00\x00", b"\x07\x00\x00", b"\x07\x07\x00", b"\x07\x07\x07"]
    with snap.open_timeline(snap_path, trust=True) as timeline:
        shown = [bytes(step.frames[-1].locals["data"].load()[:3])
                 for step in timeline.runs[-1].steps if step.function == "sieve_like"
                 and "data" in step.frames[-1].locals]
    # every step shows the buffer as it was then
    assert shown[0] == b"\x00\x00\x00" and shown[-1] == b"\x07\x07\x07"
    assert shown.index(b"\x07\x00\x00") < shown.index(b"\x07\x07\x00")


def sums(numbers):
    """A chain of two generator expressions (more-itertools' ``_complex_sumprod``): plain pickle
    refuses it, so its digest is its change detector's."""
    parts = itertools.chain((n for n in numbers), (-n for n in numbers))
    peek()
    peek()  # unchanged since the last call: not captured again
    first = next(parts)  # advanced: captured again
    peek()
    return first


def test_a_value_plain_pickle_refuses_is_captured_again_only_when_its_detector_changed(
        snap_path, traced_captures):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        assert sums([1, 2]) == 1
    assert traced_captures.count("parts") == 2
    with snap.open_timeline(snap_path) as timeline:
        shown = [frame.locals["parts"].repr for step in timeline.runs[-1].steps
                 if step.kind == "call" and step.function == "peek"
                 for frame in step.frames if frame.function == "sums"]
    assert len(shown) == 3 and all("itertools.chain" in text for text in shown)


class Token:
    def __init__(self, number):
        self.number = number


def make_and_drop(alive, count):
    for number in range(count):
        token = Token(number)
        alive.add(token)
    return None


def test_a_finished_frames_locals_are_let_go_of_at_once_in_line_tracing(snap_path):
    """boltons' test_min_id_map counts live objects through weakref callbacks: under line
    tracing a finished ``Token.__init__``'s ``self`` stayed alive until the cyclic collector
    ran (its frame state was held by the self-referencing line closure)."""
    import gc
    import weakref

    alive = weakref.WeakSet()
    gc.disable()
    try:
        with snap.record(snap_path, trace="lines", include=[HERE]):
            make_and_drop(alive, 20)
            left = len(alive)
    finally:
        gc.enable()
    assert left == 0  # the program holds none: none is alive, without a collection
