"""The piecewise JSON decoder for large previews decodes exactly what ``json.loads`` does —
including when its guessed run boundaries fall inside strings or nested values — and refuses
what ``json.loads`` refuses."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapstate_inspect.model import piecewise_json
from snapstate_inspect.model.piecewise_json import RUN_END, loads

#: Text that looks like a run boundary, to put inside strings, labels and nested values.
TRAPS = st.sampled_from(["", RUN_END, "}]", ',["', '"}],["', "\\", '\\"', "}],[\\\""])
LEAVES = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
          | st.text(max_size=8) | st.builds(lambda a, b: a + b, TRAPS, st.text(max_size=4)))
JSON_VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=5),
    max_leaves=30)
#: A preview: children ``[label, {preview}]``, the shape whose boundaries the decoder guesses.
CHILD = st.tuples(st.builds(lambda a, b: a + b, TRAPS, st.text(max_size=3)),
                  st.dictionaries(st.sampled_from(["type", "repr", "children"]), JSON_VALUES,
                                  max_size=3))
PREVIEWS = st.builds(lambda kids, extra: {"children": [list(kid) for kid in kids], **extra},
                     st.lists(CHILD, max_size=12),
                     st.dictionaries(st.sampled_from(["len", "repr", "type"]), LEAVES))


@contextmanager
def tiny_runs():
    """Runs of a few characters: every boundary guess is tried, most of them wrong."""
    saved = piecewise_json.RUN_CHARS, piecewise_json.RUN_SLACK
    piecewise_json.RUN_CHARS, piecewise_json.RUN_SLACK = 1, 400
    try:
        yield
    finally:
        piecewise_json.RUN_CHARS, piecewise_json.RUN_SLACK = saved


@settings(max_examples=150, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 0, 2]), st.booleans())
def test_any_document_decodes_as_json_loads_does(value, indent, compact):
    separators = (",", ":") if compact and indent is None else None
    text = json.dumps(value, indent=indent, separators=separators)
    assert loads(" " + text + "\n") == json.loads(text)


@settings(max_examples=200, deadline=None)
@given(PREVIEWS, st.booleans())
def test_previews_decode_the_same_whatever_the_boundary_guesses(preview, kids_blob):
    document = preview["children"] if kids_blob else preview  # a children blob is a list
    text = json.dumps(document, separators=(",", ":"), sort_keys=True)
    with tiny_runs():
        assert loads(text) == json.loads(text)


def test_a_boundary_inside_a_string_or_a_nested_value_is_not_taken():
    children = [["[0]", {"repr": "x}],["}],  # the string's closing quote completes a look-alike
                ["[1]", {"children": [["[0]", {"repr": "a"}], ["[1]", {"repr": "b"}]]}],
                ["[2]", {"repr": "c"}]]
    text = json.dumps({"children": children, "len": 3}, separators=(",", ":"))
    assert text.count(RUN_END) > 3  # more look-alikes than real boundaries
    with tiny_runs():
        assert loads(text) == {"children": children, "len": 3}


def test_a_large_canonical_preview_goes_in_runs_and_decodes_the_same(monkeypatch):
    preview = {"children": [[f"[{n}]", {"repr": str(n), "type": "builtins.int"}]
                            for n in range(20_000)],
               "len": 20_000, "repr": "[0, 1, …]", "type": "builtins.list"}
    text = json.dumps(preview, separators=(",", ":"))
    decoded = []
    original = piecewise_json._DECODER.decode
    monkeypatch.setattr(piecewise_json, "_DECODER", type("Spy", (), {
        "decode": staticmethod(lambda run: decoded.append(len(run)) or original(run))}))
    paused = []
    assert loads(text, lambda: paused.append(1)) == preview
    assert len(decoded) > 10 and max(decoded) < len(text) // 5  # in runs, none of them all
    assert len(paused) >= len(decoded) - 1  # between runs (each more than STEP_ASIDE_EVERY)


def test_malformed_text_is_refused_as_json_loads_refuses_it():
    preview = {"children": [[f"[{n}]", {"repr": str(n), "type": "int"}] for n in range(40)],
               "len": 40, "repr": "[0, 1, …]", "type": "builtins.list"}
    text = json.dumps(preview, separators=(",", ":"))
    with tiny_runs():
        assert loads(text) == preview
        for cut in range(len(text)):  # every truncation is malformed, as json.loads says too
            with pytest.raises(ValueError):
                json.loads(text[:cut])
            with pytest.raises(ValueError):
                loads(text[:cut])
    for bad in ('{"a" 1}', '{"a":1,}', '[1 2]', '[1,]', '{1:2}', '{"a":1}x', '', '[', '{"a":[1}',
                '[{"a":1}],["b"', '{"c":[["x",{}],["y",{]]}'):
        with pytest.raises(ValueError):
            json.loads(bad)
        with pytest.raises(ValueError):
            loads(bad)
    assert loads('{"a":1,"a":2}') == {"a": 2}  # duplicate keys: the last wins
