"""Fixtures of the capture tests."""

from __future__ import annotations

import pytest

from snapstate_capture.capture import valuecache


def count_captures(monkeypatch, module) -> list[str | None]:
    """The names of the values ``module``'s ``capture_value`` captures whole while the test
    runs, in order (``module``: the value cache, or the trace stream's value encoder)."""
    names: list[str | None] = []
    original = module.capture_value

    def counting(value, *, name=None, **kwargs):
        names.append(name)
        return original(value, name=name, **kwargs)

    monkeypatch.setattr(module, "capture_value", counting)
    return names


@pytest.fixture
def captures(monkeypatch):
    """The names of the values the value cache captures whole while the test runs."""
    return count_captures(monkeypatch, valuecache)


@pytest.fixture
def traced_captures(monkeypatch):
    """The names of the values the trace stream's encoder captures whole while the test runs."""
    from snapstate_capture.tracing import value_encoder

    return count_captures(monkeypatch, value_encoder)
