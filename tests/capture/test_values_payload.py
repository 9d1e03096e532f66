"""Payloads: pickle first, dill for what pickle refuses, one placeholder per bad part at its
path, by-reference globals, structured exceptions, loadability (issue 3, points 2–5)."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import threading
import typing
import warnings

import pytest

import snapstate_capture as snap
from snapstate_capture import Placeholder
from snapstate_capture.values.payload import caught_warnings

from .values_support import child, read_extra, read_locals, step_errors


class Job:
    def __init__(self, name, reply):
        self.name = name
        self.retries = 3
        self.tags = ["a", "b"]
        self.reply = reply


def test_future_among_plain_attributes_only_future_is_placeholder(snap_path):
    async def main():
        job = Job("fetch", asyncio.get_running_loop().create_future())
        snap.checkpoint("job")
        job.reply.cancel()

    with snap.record(snap_path):
        asyncio.run(main())

    got = read_locals(snap_path)["job"]
    (holder,) = got["preview"]["placeholders"]
    assert holder["path"] == "job.reply"
    assert holder["type"] == "_asyncio.Future"
    assert "pending" in holder["reason"]
    assert got["serializer"] == "pickle"
    job = got["value"]
    assert (job.name, job.retries, job.tags) == ("fetch", 3, ["a", "b"])
    assert isinstance(job.reply, Placeholder) and job.reply.path == "job.reply"
    assert any("job.reply" in e for e in step_errors(snap_path))


def test_placeholder_path_inside_list_item_attribute(snap_path):
    class Tool:
        def __init__(self, name, client=None):
            self.name, self.client = name, client

    with snap.record(snap_path):
        tools = [Tool("search"), Tool("calc"), Tool("http", threading.Lock())]
        snap.checkpoint()
    got = read_locals(snap_path)["tools"]
    assert [p["path"] for p in got["preview"]["placeholders"]] == ["tools[2].client"]
    loaded = got["value"]
    assert [t.name for t in loaded] == ["search", "calc", "http"]
    assert isinstance(loaded[2].client, Placeholder)


def test_nested_function_calling_itself_by_name(snap_path):
    def make():
        def factorial(n):
            return 1 if n <= 1 else n * factorial(n - 1)
        return factorial

    with snap.record(snap_path):
        factorial = make()
        snap.checkpoint()
    got = read_locals(snap_path)["factorial"]
    assert got["serializer"] == "pickle"  # a closure: written by the C pickler (issue 15)
    assert got["value"](6) == 720


@dataclasses.dataclass
class Index:
    name: str
    buckets: collections.defaultdict


def test_dataclass_with_lambda_defaultdict_keeps_default_factory(snap_path):
    with snap.record(snap_path):
        index = Index("words", collections.defaultdict(lambda: ["start"]))
        index.buckets["a"].append("apple")
        snap.checkpoint()
    got = read_locals(snap_path)["index"]
    assert got["serializer"] == "pickle"  # the lambda: by its code (reducers.function_reduce)
    assert [label for label, _ in got["preview"]["children"]] == [".name", ".buckets"]
    loaded = got["value"]
    assert loaded.buckets["a"] == ["start", "apple"]
    assert loaded.buckets["new"] == ["start"]  # the default factory still works


def test_plain_values_use_pickle_and_record_it(snap_path):
    with snap.record(snap_path):
        plain = {"a": [1, 2.5, "x"], "b": (None, True)}
        snap.checkpoint()
    got = read_locals(snap_path)["plain"]
    assert got["serializer"] == "pickle"
    assert got["value"] == plain


def test_module_on_attribute_is_stored_by_reference(snap_path):
    class Settings:
        def __init__(self):
            self.codec = json
            self.level = 2

    with snap.record(snap_path):
        settings = Settings()
        snap.checkpoint()
    got = read_locals(snap_path)["settings"]
    assert got["value"].codec is json
    assert child(got["preview"], ".codec")["type"] == "builtins.module"


class Boom(Exception):
    def __init__(self, code, detail):
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


def test_custom_exception_with_two_argument_init(snap_path):
    with snap.record(snap_path):
        try:
            raise Boom(404, "missing")
        except Boom as caught:
            error = caught
        snap.checkpoint("caught", error=error)
    got = read_extra(snap_path)["error"]
    loaded = got["value"]
    assert type(loaded) is Boom
    assert (loaded.code, loaded.detail, str(loaded)) == (404, "missing", "404: missing")
    assert "not_loadable" not in got["preview"]
    data = got["preview"]["exception"]
    assert data["type"].endswith("Boom") and data["message"] == "404: missing"
    assert data["attributes"] == {"code": "404", "detail": "'missing'"}
    assert data["traceback"][-1][2] == "test_custom_exception_with_two_argument_init"
    assert all(isinstance(part, (str, int)) for row in data["traceback"] for part in row)


def make_generic_box():
    item = typing.TypeVar("item")

    class Box(typing.Generic[item]):
        def __init__(self, content):
            self.content = content

    return Box[int](41), item


def test_generic_class_with_typevar_created_inside_a_function(snap_path):
    with snap.record(snap_path):
        box, item = make_generic_box()
        snap.checkpoint()
    got = read_locals(snap_path)
    loaded = got["box"]["value"]
    assert loaded.content == 41
    assert type(loaded).__qualname__ == "make_generic_box.<locals>.Box"
    assert got["item"]["value"].__name__ == "item"
    assert "not_loadable" not in got["box"]["preview"]


def test_a_value_that_refuses_to_load_is_not_loaded_while_recording(snap_path):
    calls = []

    class Fussy:
        def __init__(self):
            self.ok = True

        def __setstate__(self, state):
            calls.append(state)
            raise RuntimeError("refuses to load")

    with snap.record(snap_path):
        fussy = Fussy()
        fine = [1, 2, 3]
        snap.checkpoint()
    assert calls == []  # capture never runs the program's reconstructors (issue 22)
    got = read_locals(snap_path)  # loads with trust: now it runs, and fails
    assert got["fussy"]["has_payload"] and "not_loadable" not in got["fussy"]["preview"]
    assert "refuses to load" in got["fussy"]["load_error"]
    assert got["fine"]["value"] == [1, 2, 3]
    assert not any("not loadable" in e for e in step_errors(snap_path))


def test_test_load_can_be_turned_off(snap_path):
    class Fussy:
        def __setstate__(self, state):
            raise RuntimeError("refuses to load")

    options = snap.CaptureOptions(values=snap.ValueOptions(test_load=False))
    with snap.record(snap_path, options=options):
        fussy = Fussy()
        fussy.x = 1
        snap.checkpoint()
    got = read_locals(snap_path)["fussy"]
    assert "not_loadable" not in got["preview"] and got["has_payload"]


def test_deep_nesting_recursion_error_is_caught(snap_path):
    deep: list = []
    node = deep
    for _ in range(100_000):
        node.append([])
        node = node[0]
    with snap.record(snap_path):
        snap.checkpoint("deep")
        after = len(deep)
    assert after == 1
    got = read_locals(snap_path)["deep"]
    assert got["preview"]["type"] == "builtins.list"
    assert "RecursionError" in got["preview"]["placeholder"]["reason"]


def test_hostile_reduce_becomes_placeholder_rest_kept(snap_path):
    class NoPickle:
        def __reduce_ex__(self, protocol):
            raise RuntimeError("not today")

    with snap.record(snap_path):
        state = {"good": [1, 2], "bad": NoPickle(), "also": "fine"}
        snap.checkpoint()
    got = read_locals(snap_path)["state"]
    (holder,) = got["preview"]["placeholders"]
    assert holder["path"] == "state['bad']"
    assert "RuntimeError: not today" in holder["reason"]
    assert got["value"]["good"] == [1, 2] and got["value"]["also"] == "fine"


def test_payload_larger_than_the_limit_is_a_placeholder(snap_path):
    options = snap.CaptureOptions(values=snap.ValueOptions(max_payload_bytes=10_000))
    with snap.record(snap_path, options=options):
        small = list(range(10))
        large = bytes(50_000)
        snap.checkpoint()
    got = read_locals(snap_path)
    assert got["small"]["value"] == list(range(10))
    assert got["large"]["preview"]["placeholder"]["reason"].startswith("payload too large")
    assert got["large"]["preview"]["len"] == 50_000


def test_caught_warnings_collects_nests_and_puts_everything_back():
    """What capture's pickling warns is collected, nested blocks each collect their own, and
    the filters and ``showwarning`` are the program's again after the block, however it
    ends."""
    filters, shown = list(warnings.filters), warnings.showwarning
    with caught_warnings() as outer:
        warnings.warn("one", UserWarning)
        with caught_warnings() as inner:
            warnings.warn("two", RuntimeWarning)
            warnings.warn("two", RuntimeWarning)
        warnings.warn("three", UserWarning)
    assert inner == ["RuntimeWarning: two"]
    assert outer == ["UserWarning: one", "UserWarning: three"]
    assert warnings.filters == filters and warnings.showwarning is shown
    with pytest.raises(KeyError), caught_warnings():
        raise KeyError("out")
    assert warnings.filters == filters and warnings.showwarning is shown



def test_classes_of_a_submodule_still_being_imported_are_written_by_reference(monkeypatch):
    """While ``pkg.sub`` is imported its package has no ``sub`` attribute, and dill could not
    find the module: a class its metaclass returns (jinja2.nodes' ``NodeType``: the class not
    bound yet, its bases are) was written with every base by value, all their methods with
    them — 107 ms a capture, 7.4 s of a jinja2 recording. The bases are written by reference
    now, and a load finds the module's own classes."""
    import sys
    import types as _types

    from snapstate_capture.options import ValueOptions
    from snapstate_capture.values.payload import loads, serialize

    package, sub = _types.ModuleType("sweep_pkg"), _types.ModuleType("sweep_pkg.sub")
    package.__path__ = []
    monkeypatch.setitem(sys.modules, "sweep_pkg", package)
    monkeypatch.setitem(sys.modules, "sweep_pkg.sub", sub)  # no package.sub: mid-import
    methods = "".join(f"    def m{i}(self):\n        return {i}\n" for i in range(40))
    exec(f"class Base:\n{methods}\nclass Middle(Base):\n{methods}", sub.__dict__)
    made = type("Leaf", (sub.Middle,), {"__module__": "sweep_pkg.sub", "x": 1})  # unbound
    result = serialize(made, ValueOptions())
    assert result.data is not None, result
    assert len(result.data) < 2000, len(result.data)  # 40 methods by value: ~20 kB
    loaded = loads(result.serializer, result.data)
    assert loaded.__bases__ == (sub.Middle,) and loaded.x == 1
