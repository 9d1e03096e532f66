"""The capture fast paths give the same bytes as the careful paths they skip, and never skip
a secret (issue 7: W1 capture overhead)."""

from __future__ import annotations

import collections
import json
import pickle

import pytest

from snapstate_capture.options import ValueOptions
from snapstate_capture.values import capture_value, payload
from snapstate_capture.values.placeholder import Placeholder

OPTIONS = ValueOptions()
SECRET = "sk-" + str(11 * 1_000_003 * 17)


@pytest.fixture
def by_parts_calls(monkeypatch):
    """Counts the part-by-part walks (the slow path) taken while the test runs."""
    calls = []
    original = payload._by_parts

    def counting(obj, options, path):
        calls.append(path)
        return original(obj, options, path)

    monkeypatch.setattr(payload, "_by_parts", counting)
    return calls


def test_values_mentioning_secret_words_take_the_fast_path_with_the_same_bytes(by_parts_calls):
    notes = {f"key{i}": f"the token budget of call {i}" for i in range(100)}
    plan = [{"id": i, "task": "refresh the password policy", "status": "todo"}
            for i in range(20)]
    for value in (notes, plan):
        fast = payload.serialize(value, OPTIONS, path="v")
        careful = payload._by_parts(value, OPTIONS, "v")
        assert fast.data == careful.data == pickle.dumps(value, 5)
        assert fast.redacted == careful.redacted == ()
    assert by_parts_calls == ["v", "v"]  # only the two explicit calls above


@pytest.mark.parametrize("make", [
    lambda: {"note": "token budget", "api_key": SECRET},
    lambda: [{"note": "token budget"}, {"inner": {"password": SECRET}}],
    lambda: collections.OrderedDict(note="token budget", token=SECRET),
    lambda: ({"authorization": SECRET}, "token budget"),
], ids=["dict", "nested", "ordered-dict", "tuple"])
def test_secret_keys_are_still_redacted_from_payload_bytes(make):
    value = make()
    result = payload.serialize(value, OPTIONS, path="v")
    assert result.data is not None and SECRET.encode() not in result.data
    assert result.redacted
    loaded = pickle.loads(result.data)
    assert SECRET not in repr(loaded)
    assert any(isinstance(p, Placeholder) for p in _leaves(loaded))
    captured = capture_value(value, name="v", options=OPTIONS)
    assert SECRET not in repr(captured.preview)


class Token:
    """A lexer's token (sqlparse, pygments and lark each have a class of this name)."""

    __slots__ = ("value", "kind", "parent")

    def __init__(self, value, kind, parent=None):
        self.value, self.kind, self.parent = value, kind, parent


class TokenKinds:
    """A tree of token kinds whose attributes are named as kinds are (sqlparse's ``Token``)."""

    def __init__(self):
        self.Token = {"name": "Token"}
        self.Keyword = {"name": "Keyword", "parent": self.Token}


Credentials = collections.namedtuple("Credentials", "user password")


class Settings(dict):
    """A dict subclass holding its entries as items."""


class Session:
    def __init__(self, token):
        self.token = token
        self.history = ["the token budget"]


def test_objects_named_like_secrets_take_the_fast_path_with_the_same_bytes(by_parts_calls):
    """A class or an attribute whose *name* looks like a secret word but holds no string or
    number under it (sqlparse's ``Token`` class, its tree of token kinds with an attribute
    ``Token``) is written by the fast path: the byte scan's hit is settled by the names the
    pickle holds. Before, every such capture took the part-by-part walk (10x the cost)."""
    kinds = TokenKinds()
    root = Token("select", kinds)
    tree = [root, Token("a", kinds, root), Token("token budget", kinds, root)]
    result = payload.serialize(tree, OPTIONS, path="tree")
    assert by_parts_calls == []
    assert result.data == pickle.dumps(tree, 5) and result.redacted == ()


@pytest.mark.parametrize("make", [
    lambda: Session(SECRET),
    lambda: [Token("a", None), Session(SECRET)],
    lambda: Credentials("ann", SECRET),
    lambda: Settings(note="token budget", password=SECRET),
    lambda: Token("select", {"api_key": SECRET}),
], ids=["attribute", "in-a-list", "namedtuple-field", "dict-subclass", "key-in-a-slot"])
def test_secrets_in_objects_are_still_redacted(make, by_parts_calls):
    value = make()
    result = payload.serialize(value, OPTIONS, path="v")
    assert by_parts_calls, "the fast path kept a secret"
    assert result.data is not None and SECRET.encode() not in result.data
    assert result.redacted


def _leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def test_flat_plain_data_skips_the_test_load_and_other_data_keeps_it(monkeypatch):
    loads = []
    original = payload._test_load

    def counting(serializer, data, options):
        loads.append(serializer)
        return original(serializer, data, options)

    monkeypatch.setattr(payload, "_test_load", counting)
    for flat in ({"a": "x", "b": 1}, ["x", 2.5, None], [{"role": "user", "content": "hi"}],
                 {"a": ["tag", 1]}, [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": []}]):
        result = payload.serialize(flat, OPTIONS)
        assert result.data == pickle.dumps(flat, 5) and result.loadable is True
    assert loads == []
    payload.serialize({"a": [["nested"]]}, OPTIONS)
    payload.serialize([{"id": 1, "tags": [("a",)]}], OPTIONS)
    payload.serialize([collections.OrderedDict(a=1)], OPTIONS)
    assert loads == ["pickle", "pickle", "pickle"]


def test_flat_records_with_a_secret_name_or_a_credential_in_a_list_are_still_redacted():
    records = [{"id": 1, "password": ["hunter2", "x"]}, {"id": 2, "password": []}]
    assert b"hunter2" not in (payload.serialize(records, OPTIONS).data or b"")
    key = "sk-" + "A1b2C3d4" * 4
    tagged = [{"id": 1, "tags": ["ok", key]}]
    result = payload.serialize(tagged, OPTIONS)
    assert key.encode() not in (result.data or b"")


def _slot_ref(cache, value, name="v", out=None):
    from snapstate_capture.capture.frames import StackCapture

    out = out or StackCapture()
    return cache.ref(("f", 0, name), value, name, out), out


def _preview_bytes(out, ref):
    return out.blobs[ref["p"]]


@pytest.mark.parametrize("values", [[0, 1, 2, 10**40], [1.5, float("nan"), -0.0],
                                    ["a", "b" * 600, ""], [True, False, None]])
def test_changed_scalars_store_what_capture_value_stores(values):
    from snapstate_capture.store.hashing import canonical_json
    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.capture.valuecache import ValueCache

    from snapstate_capture.values.preview import PreviewBuilder

    cache = ValueCache(CaptureOptions())
    for value in values:
        ref, out = _slot_ref(cache, value)
        fresh = capture_value(value, name="v", options=OPTIONS)
        if "v" in ref:  # inline (schema 4): no blobs; the reader builds this same preview
            assert ref == {"v": value} and not out.blobs
            assert PreviewBuilder(OPTIONS).build(value) == fresh.preview
            continue
        assert type(value) in (int, str) and (abs(value) >= 2 ** 63 if type(value) is int
                                              else len(value) > 200)
        assert _preview_bytes(out, ref) == canonical_json(fresh.preview)
        assert out.blobs[ref["b"]] == fresh.payload and ref["s"] == fresh.serializer


def test_a_random_generator_is_captured_again_only_when_its_state_moves():
    import random

    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.capture.valuecache import ValueCache

    cache = ValueCache(CaptureOptions())
    rng = random.Random(3)
    first, _ = _slot_ref(cache, rng)
    same, out = _slot_ref(cache, rng)
    assert same is first and not out.blobs
    rng.random()
    moved, out = _slot_ref(cache, rng)
    assert moved["b"] != first["b"]
    assert pickle.loads(out.blobs[moved["b"]]).random() == rng.random()


def test_reused_preview_children_give_the_bytes_of_a_fresh_preview():
    from snapstate_capture.store.hashing import canonical_json
    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.capture.valuecache import ValueCache

    cache = ValueCache(CaptureOptions())
    pad = {f"key{i}": f"note {i}" for i in range(80)}
    items = ["a", 1, 2.5, None, "b"] * 12
    for step in range(30):
        pad[f"key{(step * 7) % 90}"] = f"changed at {step}"  # new keys too, past the shown 50
        if step == 10:
            del pad["key3"]
        if step == 20:
            pad["token_ref"] = "short token text"
        items[1 + step % 59] = step if step % 3 else [step]  # (the first item decides chunking)
        for name, value in (("pad", pad), ("items", items)):
            ref, out = _slot_ref(cache, value, name)
            fresh = capture_value(value, name=name, options=OPTIONS)
            stored = out.blobs.get(ref["p"])
            if stored is not None:  # else unchanged since the last step (checked there)
                assert stored == canonical_json(fresh.preview), (name, step)
            payload_bytes = out.blobs.get(ref["b"])
            if payload_bytes is not None:
                assert payload_bytes == fresh.payload, (name, step)


def test_a_dict_with_one_value_set_gives_the_preview_and_identity_of_a_fresh_capture(
        monkeypatch):
    """W1's scratchpad and a table of ints: the same keys, one value set per step. The preview
    is rebuilt from the last one (``PreviewBuilder._dict_again``) and its identity from the
    last item digests; both are byte for byte a fresh capture's, also when a value becomes a
    credential, a long text, a list, or the value of a secret name."""
    from snapstate_capture.store.hashing import canonical_json
    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.capture.valuecache import ValueCache
    from snapstate_capture.values import preview

    again = []
    original = preview.PreviewBuilder._dict_again

    def counting(self, obj, node, path_ids):
        found = original(self, obj, node, path_ids)
        again.append(found is not None)
        return found

    monkeypatch.setattr(preview.PreviewBuilder, "_dict_again", counting)
    cache = ValueCache(CaptureOptions())
    pad = {f"key{i}": f"note {i}" for i in range(70)}
    pad["api_token"] = "t" * 20
    table = {f"row{i}": i for i in range(100)}
    creds = {"api_token": "v" * 20, "user": "me"}  # a secret name among the shown keys
    specials = {5: SECRET, 9: "y" * 500, 13: [1, 2], 17: "back to text", 21: 2 ** 70}
    for step in range(30):
        pad[f"key{(step * 7) % 70}"] = specials.get(step, f"changed at {step}")
        table[f"row{step % 100}"] = step * 1000
        creds["user"] = f"me {step}"
        if step == 25:
            pad["api_token"] = creds["api_token"] = "u" * 20
        for name, value in (("pad", pad), ("table", table), ("creds", creds)):
            ref, out = _slot_ref(cache, value, name)
            fresh = capture_value(value, name=name, options=OPTIONS)
            assert out.blobs[ref["p"]] == canonical_json(fresh.preview), (name, step)
            assert out.blobs[ref["b"]] == fresh.payload, (name, step)
    assert SECRET not in json.dumps(capture_value(pad, name="pad", options=OPTIONS).preview)
    assert again.count(True) >= 40  # most steps of pad and table took the fast path
    assert "u" * 20 not in json.dumps(capture_value(creds, name="c", options=OPTIONS).preview)


def test_ints_that_look_like_addresses_keep_a_dicts_digest_incremental(monkeypatch):
    """Ints of 2**20 and more that are multiples of 8 could be addresses (a byte count, a
    timestamp in ms): one among a dict's values sent every capture of it through the whole
    identity walk and the search of the stack. Only one that is an address — the id of a
    local, here — does now; each digest is still a fresh capture's, byte for byte."""
    from snapstate_capture.capture.valuecache import ValueCache
    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.store.hashing import canonical_json
    from snapstate_capture.values import identity_at_capture as identity_module

    from tests.conftest import count_calls

    walks = count_calls(monkeypatch, identity_module, "identity")
    cache = ValueCache(CaptureOptions())
    table = {f"row{i}": (1 << 21) + 8 * i for i in range(100)}  # each could be an address
    held = object()  # a local: its id in the table is an address
    for step in range(40):
        table[f"row{step % 100}"] = id(held) if step == 30 else (1 << 30) + 8 * step
        ref, out = _slot_ref(cache, table, "table")
        monkeypatch.setattr(identity_module, "identity", walks.original)
        fresh = capture_value(table, name="table", options=OPTIONS)
        monkeypatch.setattr(identity_module, "identity", walks.counting)
        assert out.blobs[ref["p"]] == canonical_json(fresh.preview), step
    # walked only while it holds the local's id (steps 30-39); before, at all 40 steps
    assert [type(value) for value in walks].count(dict) == 10, walks


def test_a_secret_key_at_a_reused_position_is_redacted():
    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.capture.valuecache import ValueCache

    cache = ValueCache(CaptureOptions())
    value = SECRET
    long_plain = "x" * 90 + "plain"
    long_secret = "x" * 90 + "password"  # same clipped label as long_plain
    pad = {"a": "1", long_plain: value}
    _slot_ref(cache, pad, "pad")
    del pad[long_plain]
    pad[long_secret] = value  # the same object, at the same position
    ref, out = _slot_ref(cache, pad, "pad")
    assert SECRET.encode() not in out.blobs[ref["p"]]
    assert SECRET.encode() not in out.blobs[ref["b"]]
    shown = json.loads(out.blobs[ref["p"]])["children"][1][1]
    assert shown == {"type": "builtins.str", "repr": "<redacted>", "redacted": True}


@pytest.mark.parametrize("value", [
    [{"role": "user", "content": "the token budget"}] * 3 + [{"n": 1, "x": 2.5, "b": b"z"}],
    {"a": "x", "b": None, "c": True},
    ["plain", 1, 2.0],
])
def test_a_plain_detector_pickle_is_the_payload_serialize_writes(value):
    data = pickle.dumps(value, 5)
    assert payload.is_plain_payload(value, data, OPTIONS)
    assert payload.serialize(value, OPTIONS).data == data


@pytest.mark.parametrize("value", [
    [{"role": "user", "api_key": SECRET}],
    [{"nested": {"a": 1}}],
    [collections.OrderedDict(a=1)],
])
def test_secret_or_nested_data_is_never_taken_as_a_plain_payload(value):
    assert not payload.is_plain_payload(value, pickle.dumps(value, 5), OPTIONS)


def test_changed_scalars_get_no_payload_when_payloads_are_off():
    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.capture.valuecache import ValueCache

    cache = ValueCache(CaptureOptions(payloads=False))
    for value in (1, 2, "text", {"a": "b"}, {"a": "c"}, [{"n": i} for i in range(40)]):
        ref, out = _slot_ref(cache, value)
        assert "b" not in ref and set(out.blobs) == {ref["p"]}


class Holder:
    """An importable class whose instances hold what plain pickle refuses."""


def test_values_with_lambdas_are_captured_again_only_when_they_change():
    """Change detection of a value plain pickle refuses (a closure, a module inside): unchanged,
    nothing is captured or written; a change of the closure's cell, of a default or of a plain
    attribute is a new capture, as dill's payload would differ."""
    import types

    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.capture.detectors import function_detector
    from snapstate_capture.capture.valuecache import ValueCache

    class Local:  # a local class: by identity, as pickle writes an importable one by name
        pass

    value = Holder()
    value.kind = Local
    value.rule = (lambda limit: (lambda x: x > limit))(3)
    value.where = types  # a module
    value.count = 1
    with pytest.raises(Exception):
        pickle.dumps(value)
    cache = ValueCache(CaptureOptions())
    first, out = _slot_ref(cache, value)
    assert first["p"] in out.blobs
    same, out = _slot_ref(cache, value)
    assert same is first and not out.blobs
    value.count = 2
    counted, out = _slot_ref(cache, value)
    assert counted is not first and counted["p"] in out.blobs
    value.rule.__closure__[0].cell_contents = 4  # the closure's state moved
    assert _slot_ref(cache, value)[0] is not counted
    value.rule.__defaults__ = (1,)
    assert function_detector(value) != function_detector(Holder())
    before = function_detector(value)
    value.rule.__defaults__ = (2,)
    assert function_detector(value) != before


def test_a_lambda_default_factory_is_detected_without_dill_each_step():
    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.capture.valuecache import ValueCache

    cache = ValueCache(CaptureOptions())
    counts = collections.defaultdict(lambda: 0)
    counts["a"] += 1
    first, _ = _slot_ref(cache, counts)
    same, out = _slot_ref(cache, counts)
    assert same is first and not out.blobs
    counts["b"] += 1
    moved, out = _slot_ref(cache, counts)
    assert moved is not first and moved["p"] in out.blobs
    assert b"['b']" in out.blobs[moved["p"]]  # the preview shows the new key


class Engine:
    """Stands in for a framework's compiled graph: registered as machinery below."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.rule = lambda x: x  # what makes plain pickle refuse it, as a compiled graph's


def test_framework_machinery_is_previewed_without_pickling_and_stored_once(monkeypatch):
    """Machinery in a frame (``values/machinery.py``) is never pickled to detect a change
    (a compiled graph's failed pickle cost ~10 ms a step): the same preview is the same ref,
    a changed description a new preview, and never a payload."""
    from snapstate_capture.capture import detectors, valuecache
    from snapstate_capture.capture.valuecache import ValueCache
    from snapstate_capture.values import machinery
    from snapstate_capture.options import CaptureOptions

    machinery.register([f"{__name__}.Engine"],
                       lambda obj: "nodes=" + ",".join(machinery.field(obj, "nodes")))
    refused = []
    monkeypatch.setattr(valuecache, "function_detector", lambda *args: refused.append(args))
    monkeypatch.setattr(detectors.pickle, "dumps", lambda *a, **k: refused.append(a))
    cache = ValueCache(CaptureOptions())
    engine = Engine(["agent", "tools"])
    first, out = _slot_ref(cache, engine)
    assert set(first) == {"p"} and b"<Engine nodes=agent,tools>" in out.blobs[first["p"]]
    same, out = _slot_ref(cache, engine)
    assert same is first and not out.blobs
    engine.nodes = ["agent"]
    moved, out = _slot_ref(cache, engine)
    assert moved is not first and b"<Engine nodes=agent>" in out.blobs[moved["p"]]
    assert refused == []


class Member:
    def __init__(self, name):
        self.name, self.visits = name, 0


class Registry:
    """Holds its members weakly (a WeakKeyDictionary: weak references and a closure over one),
    which plain pickle refuses and dill writes as the members themselves."""

    def __init__(self):
        import weakref

        self.members = weakref.WeakKeyDictionary()


def test_weak_references_are_detected_by_their_referents_without_dill_each_step():
    """A value holding weak references has a change detector (each written as its referent and
    both identities): captured again only when a member changed, was dropped or replaced."""
    import gc

    from snapstate_capture.capture.detectors import function_detector
    from snapstate_capture.capture.valuecache import ValueCache
    from snapstate_capture.options import CaptureOptions

    registry, first, second = Registry(), Member("a"), Member("b")
    registry.members[first] = 1
    registry.members[second] = 2
    with pytest.raises(Exception):
        pickle.dumps(registry)
    assert function_detector(registry) is not None
    cache = ValueCache(CaptureOptions())
    ref, _ = _slot_ref(cache, registry)
    same, out = _slot_ref(cache, registry)
    assert same is ref and not out.blobs  # unchanged: no capture
    first.visits = 5  # a referent's state
    visited, out = _slot_ref(cache, registry)
    assert visited is not ref and visited["b"] in out.blobs
    del second
    gc.collect()  # a referent gone: its entry leaves the dictionary
    dropped, out = _slot_ref(cache, registry)
    assert dropped is not visited and dropped["p"] in out.blobs
    before = function_detector(registry)
    twin = Member("a")
    twin.visits = 5
    del registry.members[first]
    registry.members[twin] = 1  # another object, in the same state (its address differs)
    assert function_detector(registry) != before


class Worker:
    """Holds parts a capture keeps as placeholders whatever they hold: a pending future (its
    reducer refuses it) and compiled objects neither pickle nor dill can write."""

    def __init__(self):
        import asyncio
        import contextvars
        import selectors

        self.loop = asyncio.new_event_loop()
        self.pending = self.loop.create_future()
        self.selector = selectors.DefaultSelector()
        self.request_id = contextvars.ContextVar("request_id")
        self.done = 0

    def close(self):
        self.selector.close()
        self.loop.close()


def test_parts_kept_as_placeholders_are_detected_by_their_previews():
    """A value holding a pending future, a selector, a ContextVar and an event loop has a change
    detector (each such part written as its class, identity and preview, as its placeholder
    shows it; a callback's context as its variables): captured again only when it changed, and
    a part replaced by another is a change; the loop, machinery, by its one-line preview."""
    from snapstate_capture.capture.detectors import function_detector
    from snapstate_capture.capture.valuecache import ValueCache
    from snapstate_capture.options import CaptureOptions
    from snapstate_capture.values.preview import PreviewBuilder

    worker = Worker()
    try:
        with pytest.raises(Exception):
            pickle.dumps(worker.selector)
        options = CaptureOptions()
        builder = PreviewBuilder(options.values)
        holder = {"selector": worker.selector, "pending": worker.pending,
                  "request_id": worker.request_id, "loop": worker.loop}
        assert function_detector(holder, builder) is not None
        cache = ValueCache(options)
        ref, out = _slot_ref(cache, holder)
        assert b"placeholder" in out.blobs[ref["p"]]  # the parts are placeholders
        same, out = _slot_ref(cache, holder)
        assert same is ref and not out.blobs
        before = function_detector(holder, builder)
        worker.pending.set_result(7)  # its preview says done now
        assert function_detector(holder, builder) != before
        settled, out = _slot_ref(cache, holder)
        assert settled is not ref and settled["p"] in out.blobs
        holder["pending"] = worker.loop.create_future()  # another pending future
        replaced = _slot_ref(cache, holder)[0]
        assert replaced is not settled
        # the loop is machinery (values/event_loops.py): one more callback in its queue is
        # the framework's, not the program's state
        worker.loop.call_soon(print, "later")
        assert _slot_ref(cache, holder)[0] is replaced
    finally:
        worker.close()
