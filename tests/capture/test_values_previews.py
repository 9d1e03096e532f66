"""Previews: bounded JSON trees, static attribute reads, guarded and timed reprs, and the
library types (numpy, pandas, pydantic) — issue 3, point 1. Each case is a recorded run."""

from __future__ import annotations

import collections
import dataclasses
import time

import numpy as np
import pandas as pd
import pydantic

import snapstate_capture as snap

from .values_support import child, read_locals

Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Order:
    item: str
    qty: int
    notes: list


class Slots:
    __slots__ = ("a", "b", "unset")

    def __init__(self):
        self.a, self.b = 1, "two"


def test_containers_dataclass_namedtuple_slots(snap_path):
    with snap.record(snap_path):
        order = Order("tea", 2, ["green"])
        point = Point(3, 4)
        slots = Slots()
        mixed = {"list": [1, 2], "tuple": (1,), "set": {7}, "frozen": frozenset({8})}
        snap.checkpoint()
    got = read_locals(snap_path)
    order = got["order"]["preview"]
    assert [label for label, _ in order["children"]] == [".item", ".qty", ".notes"]
    assert order["repr"] == "Order(item='tea', qty=2, notes=['green'])"
    assert child(got["point"]["preview"], ".y")["repr"] == "4"
    assert [label for label, _ in got["slots"]["preview"]["children"]] == [".a", ".b"]
    mixed = got["mixed"]["preview"]
    assert child(mixed, "['tuple']")["repr"] == "(1,)"
    assert child(child(mixed, "['set']"), "{0}")["repr"] == "7"
    assert child(mixed, "['frozen']")["type"] == "builtins.frozenset"


def test_bounds_on_depth_items_and_strings_with_more_markers(snap_path):
    options = snap.CaptureOptions(values=snap.ValueOptions(
        max_depth=2, max_items=5, max_string=20, max_repr=40))
    with snap.record(snap_path, options=options):
        many = list(range(1000))
        deep = {"a": {"b": {"c": {"d": 1}}}}
        text = "x" * 10_000
        snap.checkpoint()
    got = read_locals(snap_path)
    many = got["many"]["preview"]
    assert (len(many["children"]), many["more"], many["len"]) == (5, 995, 1000)
    assert many["repr"].endswith("…]")
    inner = child(child(got["deep"]["preview"], "['a']"), "['b']")
    assert inner["truncated"] is True and "children" not in inner
    text = got["text"]["preview"]
    assert text["len"] == 10_000 and len(text["repr"]) <= 20 and text["repr"].endswith("…")


class Loud:
    def __repr__(self):
        raise RuntimeError("repr exploded")


class Slow:
    calls = 0

    def __repr__(self):
        Slow.calls += 1
        time.sleep(0.3)
        return "Slow()"


def test_raising_and_slow_repr(snap_path):
    Slow.calls = 0
    options = snap.CaptureOptions(values=snap.ValueOptions(slow_repr_seconds=0.1))
    with snap.record(snap_path, options=options):
        loud = Loud()
        slow = Slow()
        for _ in range(3):
            snap.checkpoint()
    assert Slow.calls == 1, "a slow __repr__ was called again"
    for step in range(3):
        got = read_locals(snap_path, step=step)
        assert got["loud"]["preview"]["repr"] == "<repr failed: RuntimeError: repr exploded>"
        assert got["slow"]["preview"]["repr"].startswith("<repr failed: SlowRepr: took 0.")


class Lazy:
    def __init__(self):
        self.loaded = False

    def __getattr__(self, name):
        raise AssertionError(f"capture called __getattr__({name!r})")

    @property
    def data(self):
        raise AssertionError("capture evaluated a property")


def test_attributes_read_statically(snap_path):
    with snap.record(snap_path):
        lazy = Lazy()
        snap.checkpoint()
    got = read_locals(snap_path)["lazy"]
    assert [label for label, _ in got["preview"]["children"]] == [".loaded"]


def test_numpy_array_preview(snap_path):
    with snap.record(snap_path):
        grid = np.arange(12, dtype=np.float32).reshape(3, 4)
        flags = np.array([True, False, True])
        snap.checkpoint()
    got = read_locals(snap_path)
    grid = got["grid"]["preview"]
    assert (grid["shape"], grid["dtype"], grid["size"]) == ([3, 4], "float32", 12)
    assert grid["summary"] == {"min": 0.0, "max": 11.0, "mean": 5.5}
    assert grid["head"][:3] == [0.0, 1.0, 2.0]
    assert grid["repr"].startswith("array([[ 0., 1.")
    assert np.array_equal(got["grid"]["value"], np.arange(12, dtype=np.float32).reshape(3, 4))
    assert got["flags"]["preview"]["summary"] == {"true": 2}


def test_pandas_dataframe_and_series_preview(snap_path):
    with snap.record(snap_path):
        frame = pd.DataFrame({"city": ["Oslo", "Lima", "Pune"] * 4, "rain": range(12)})
        series = pd.Series([0.5, 1.5, 2.5], name="mm")
        snap.checkpoint()
    got = read_locals(snap_path)
    frame = got["frame"]["preview"]
    assert frame["shape"] == [12, 2]
    assert frame["dtypes"]["rain"] == "int64"
    assert frame["head"]["columns"] == ["city", "rain"]
    assert frame["head"]["rows"][1] == ["Lima", "1"]
    assert frame["repr"].startswith("<DataFrame 12 rows × 2 columns")
    series = got["series"]["preview"]
    assert (series["len"], series["dtype"]) == (3, "float64")
    assert series["head"]["values"] == ["0.5", "1.5", "2.5"]
    assert got["series"]["value"].tolist() == [0.5, 1.5, 2.5]


class Invoice(pydantic.BaseModel):
    number: int
    lines: list[str]
    customer: dict

    @pydantic.computed_field
    @property
    def total_lines(self) -> int:
        raise AssertionError("capture evaluated a computed field")


def test_pydantic_model_preview_without_computed_fields(snap_path):
    with snap.record(snap_path):
        invoice = Invoice(number=7, lines=["a", "b"], customer={"name": "Ada"})
        snap.checkpoint()
    got = read_locals(snap_path)["invoice"]
    preview = got["preview"]
    assert [label for label, _ in preview["children"]] == [".number", ".lines", ".customer"]
    assert preview["repr"] == "Invoice(number=7, lines=['a', 'b'], customer={'name': 'Ada'})"
    assert got["value"].number == 7 and got["value"].lines == ["a", "b"]


def test_exception_preview_is_structured_data(snap_path):
    def fail():
        raise ValueError("bad value", 42)

    with snap.record(snap_path):
        try:
            fail()
        except ValueError as caught:
            problem = caught
        snap.checkpoint()
    data = read_locals(snap_path)["problem"]["preview"]["exception"]
    assert data["type"] == "builtins.ValueError"
    assert data["args"] == ["'bad value'", "42"]
    assert [row[2] for row in data["traceback"]] == [
        "test_exception_preview_is_structured_data", "fail"]
    assert "ValueError: ('bad value', 42)" in data["text"]


class Endless:
    def __repr__(self):
        return f"<Endless {self!r}>"  # simpy's Timeout before its __init__ ran


def test_a_repr_that_recurses_forever_reads_the_same_at_any_stack_depth():
    """CPython's message for the RecursionError depends on how deep the stack was when the
    repr began ("... while getting the str of an object" or not): a replay, at another depth,
    diverged on the text (helper-39: simpy traced, 5 of 5)."""
    from snapstate_capture.values.reprs import safe_repr

    def deeper(n):
        return safe_repr(Endless(), 300) if n == 0 else deeper(n - 1)

    shown = {deeper(n) for n in (0, 7, 50, 300)}
    assert shown == {"<repr failed: RecursionError: maximum recursion depth exceeded>"}, shown


class Board:
    calls = 0

    def __init__(self, size):
        self.items = list(range(size))

    def __repr__(self):
        Board.calls += 1
        return f"Board({self.items!r})"


def test_a_repr_that_writes_a_huge_text_is_not_called_again():
    """A repr's cost grows with its text, of which a preview keeps a few hundred characters:
    sortedcontainers' SortedList of 50,000 items (~500 kB, ~40 ms) was written at every
    traced step (helper-39's 20 updates of one: 0.2 s plain, 18.9 s recorded, 2.1 s now).
    The length, unlike a time, is the same in a run and its replay."""
    from snapstate_capture.values.reprs import HUGE_REPR, safe_repr

    small = safe_repr(Board(10), 300, 0.5)
    assert small.startswith("Board([0, 1, 2")
    first = safe_repr(Board(HUGE_REPR // 3), 300, 0.5)
    assert first.startswith("Board([0, 1, 2") and len(first) == 300  # shown, clipped
    calls = Board.calls
    again = [safe_repr(Board(n), 300, 0.5) for n in (5, HUGE_REPR)]
    assert Board.calls == calls  # not called again, whatever the size
    assert again[0] == again[1] == "<Board: repr not called again: one ran to " \
        f"{len(repr(list(range(HUGE_REPR // 3)))) + 7:,} characters>"
