"""Fixtures of the capture tests."""

from __future__ import annotations

import pytest

from snapstate_capture.capture import valuecache


@pytest.fixture
def captures(monkeypatch):
    """The names of the values captured whole (``capture_value`` runs in the value cache)
    while the test runs, in order."""
    names: list[str | None] = []
    original = valuecache.capture_value

    def counting(value, *, name=None, **kwargs):
        names.append(name)
        return original(value, name=name, **kwargs)

    monkeypatch.setattr(valuecache, "capture_value", counting)
    return names
