"""Call tracing shows each caller as it is at its callee's call (``CallFrame.refresh``): every
value a caller holds is checked in full there, so an edit in place — one level down or
deeper, with or without a change of length — shows at the next call, also after an explicit
checkpoint or an exception step. These cases broke a cheaper check by shallow forms (tried on
2026-12-04 and taken out: docs/storage.md); they stay here as the contract."""

from __future__ import annotations

import gc
import weakref

import snapstate_capture as snap

HERE = __file__


class Box:
    def __repr__(self):
        return f"Box({self.__dict__})"


def peek():
    return None


def _views(path, name, caller):
    """(step kind, the repr of ``name`` in frame ``caller``) at each step that shows it."""
    with snap.open_timeline(path) as timeline:
        out = []
        for step in timeline.runs[-1].steps:
            for frame in step.frames:
                if frame.function == caller and name in frame.locals:
                    out.append((step.kind, step.function, frame.locals[name].repr))
        return out


def _at_peeks(path, name, caller):
    """The repr of ``name`` in frame ``caller`` at each call step of ``peek``."""
    return [shown for kind, fn, shown in _views(path, name, caller)
            if kind == "call" and fn == "peek"]


def after_a_checkpoint():
    box = Box()
    box.inner = Box()
    box.inner.v = 1
    peek()
    box.inner.v = 2
    snap.checkpoint("cp")
    peek()
    return None


def test_the_steps_after_a_checkpoint_show_what_it_showed(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        after_a_checkpoint()
    views = _views(snap_path, "box", "after_a_checkpoint")
    at = [i for i, (kind, _, _) in enumerate(views) if kind == "checkpoint"][0]
    assert "'v': 2" in views[at][2]
    assert all("'v': 2" in shown for _, _, shown in views[at:]), views[at:]


def an_item_replaced(n):
    items = [n + 1000, n + 2000]
    peek()
    items[1] = None
    items[1] = n + 3000  # may well take the freed int's address
    peek()
    return None


def test_a_callers_list_item_replaced_in_place_shows_at_the_next_call(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        an_item_replaced(1)
    assert _at_peeks(snap_path, "items", "an_item_replaced") == ["[1001, 2001]", "[1001, 3001]"]


def after_an_exception(n):
    items = [n + 1000, n + 2000]
    keep = items[1]
    peek()
    items[1] = n + 5000
    try:
        raise ValueError
    except ValueError:
        pass
    items[1] = keep  # back to the very object of the first call
    peek()
    return None


def test_a_callers_list_after_an_exception_step_shows_what_it_holds(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        after_an_exception(1)
    assert _at_peeks(snap_path, "items", "after_an_exception") == ["[1001, 2001]", "[1001, 2001]"]


def edit_inside(table):
    peek()
    table["a"].append(2)
    peek()
    return None


def test_an_edit_inside_a_callers_dict_shows_at_the_next_call(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        edit_inside({"a": [1]})
    assert _at_peeks(snap_path, "table", "edit_inside") == ["{'a': [1]}", "{'a': [1, 2]}"]


def test_a_long_text_handed_down_is_the_same_value_in_every_frame(snap_path):
    text = "word " * 500

    def inner(t):
        return len(t)

    def outer(t):
        return inner(t) + inner(t)

    with snap.record(snap_path, trace="calls", include=[HERE]):
        outer(text)
    with snap.open_timeline(snap_path) as timeline:
        values = [v for s in timeline.runs[-1].steps for f in s.frames
                  for n, v in f.locals.items() if n == "t"]
        assert values and {v.digest for v in values} == {values[0].digest}
        assert values[0].load(trust=True) == text


def returns_its_local():
    box = Box()
    box.v = [1, 2, 3]
    return box


def test_a_returned_local_is_the_same_value_as_the_local(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        returns_its_local()
    with snap.open_timeline(snap_path) as timeline:
        back = [s for s in timeline.runs[-1].steps
                if s.function == "returns_its_local" and s.kind == "return"][0]
        assert back.extra["return"].digest == back.frames[-1].locals["box"].digest
        assert back.extra["return"].load(trust=True).v == [1, 2, 3]


def hold(thing):
    return 0


def make_class_and_instance():
    class Temporary:
        pass

    thing = Temporary()
    hold(thing)
    hold(thing)
    return weakref.ref(thing), weakref.ref(Temporary)


def test_no_object_or_class_is_kept_alive_by_tracing(snap_path):
    with snap.record(snap_path, trace="calls", include=[HERE]):
        thing, cls = make_class_and_instance()
        gc.collect()
        assert thing() is None and cls() is None


def hand_over_and_let_go():
    class Node:
        def __del__(self):
            deleted.append("del")

    node = Node()
    hold(node)  # the call's catch-up reads this frame's locals: ``node`` is among them
    alive = weakref.ref(node)
    del node
    gc.collect()  # no traced event in this frame since the ``del``
    return alive() is None


deleted: list = []


def test_an_object_handed_to_a_traced_call_dies_at_its_del(snap_path):
    """Nothing the tracer keeps of a caller's locals — its catch-up's record, the ``f_locals``
    dict reading them left on the frame — holds an object the program let go of (helper-37:
    a test's ``del n; gc.collect(); assert ref() is None`` failed under ``--snapstate``, its
    ``__del__`` and ``weakref.finalize`` did not run)."""
    deleted.clear()
    with snap.record(snap_path, trace="calls", include=[HERE]):
        assert hand_over_and_let_go()
    assert deleted == ["del"]


def a_list_of_numbers_edited(n):
    items = [n + 1000 + i for i in range(20)] + [1]
    peek()
    items[3] = None
    items[3] = n + 5000  # may well take the freed int's address
    peek()
    items[20] = True  # equal to the 1 it replaces, and another type
    peek()
    items.sort(reverse=True)  # the same objects, in other places
    peek()
    peek()
    return None


def test_a_callers_list_of_scalars_compared_by_identity_still_shows_every_edit(snap_path):
    """Lists of 16 or more strings and numbers are compared by their elements' identities
    (``CallFrame.scalars``): a replaced element, an equal one of another type and a
    reordering each show at the next call; an unchanged list is not stored again."""
    with snap.record(snap_path, trace="calls", include=[HERE]):
        a_list_of_numbers_edited(1)
    shown = _at_peeks(snap_path, "items", "a_list_of_numbers_edited")
    first = [1001 + i for i in range(20)]
    edited = first[:3] + [5001] + first[4:]
    assert shown == [repr(first + [1]), repr(edited + [1]), repr(edited + [True]),
                     repr(sorted(edited + [True], reverse=True)),
                     repr(sorted(edited + [True], reverse=True))]


def look_up(table, key):
    return table.get(key)


def edit(table, key):
    table[key].append("edited")  # in place, inside an entry: no length changes
    return None


def a_big_table_handed_to_calls():
    table = {n: [n] for n in range(1000)}
    for key in range(20):
        look_up(table, key)
    edit(table, 3)
    return None


def test_a_big_dict_handed_to_a_call_is_not_taken_in_chunks_again_at_its_return(
        snap_path, monkeypatch):
    """A list or dict stored whole at a call step (its marshal copy) and unchanged at the
    return is told so by its hash again: its first capture by chunks there pickled and
    previewed every chunk — 2.6 ms a call for 1,000 entries (helper-37). Changed in place
    inside an entry, it is still caught at the return."""
    from snapstate_capture.tracing.chunked_locals import ChunkedLocals

    taken = []
    original = ChunkedLocals.ref

    def counting(self, fid, name, value, per_chunk):
        taken.append(name)
        return original(self, fid, name, value, per_chunk)

    monkeypatch.setattr(ChunkedLocals, "ref", counting)
    with snap.record(snap_path, trace="calls", include=[HERE]):
        a_big_table_handed_to_calls()
    # the caller's catch-up at each of the 21 calls, the edited return and the caller's own
    # (23); each callee's return took one more before (43)
    assert taken.count("table") <= 24, len(taken)
    shown = [shown for kind, fn, shown in _views(snap_path, "table", "edit") if kind == "return"]
    assert shown and "'edited'" in shown[-1]
