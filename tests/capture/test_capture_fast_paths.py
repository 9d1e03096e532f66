"""The capture fast paths give the same bytes as the careful paths they skip, and never skip
a secret (issue 7: W1 capture overhead)."""

from __future__ import annotations

import collections
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


def _leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value
