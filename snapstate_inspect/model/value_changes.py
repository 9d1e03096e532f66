"""What a value diff says and within which bounds: ``DiffOptions``, ``Budget``, ``Change`` and
``ValueDiff`` (the differ itself is ``model.value_diff``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class DiffOptions:
    """Bounds for one diff. ``time_limit`` (seconds, per step diff), ``max_changes`` (per
    value), ``small`` (containers with at most this many nodes go to DeepDiff whole; bigger ones
    are walked here), ``max_string`` (characters above which strings are compared directly),
    ``max_repr`` (characters of old/new shown per change), ``full_values`` (diff loaded payloads;
    needs ``trust``), ``trust`` (the user vouches for the files, DESIGN.md "Trust")."""

    time_limit: float = 5.0
    max_changes: int = 200
    small: int = 16
    max_string: int = 10_000
    max_repr: int = 200
    full_values: bool = False
    trust: bool = False


@dataclass(frozen=True)
class Change:
    """One difference inside a value.

    ``kind``: ``changed`` (old → new), ``added`` / ``removed`` (an item, key or attribute),
    ``type`` (the type changed; ``old``/``new`` are the reprs, ``old_type``/``new_type`` the
    types), ``len`` (the length changed beyond what the preview shows), ``hidden`` (the previews
    are equal but the payloads differ: the difference lies beyond the preview).
    """

    path: str
    kind: str
    old: str | None = None
    new: str | None = None
    old_type: str | None = None
    new_type: str | None = None

    def to_json(self, prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {"path": prefix + self.path, "kind": self.kind,
                               "old": self.old, "new": self.new}
        if self.old_type is not None or self.new_type is not None:
            out["old_type"], out["new_type"] = self.old_type, self.new_type
        return out


@dataclass
class ValueDiff:
    """The changes inside one value; ``partial`` when a bound stopped the diff (see ``notes``)."""

    changes: list[Change] = field(default_factory=list)
    partial: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.changes and not self.partial and not self.notes

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


class Budget:
    """A deadline (``time.monotonic`` seconds) and a change cap shared by one diff.

    ``expired()`` is True once the deadline passed; ``exhausted`` remembers that it did, so the
    result can say "partial diff: time limit reached".
    """

    def __init__(self, time_limit: float) -> None:
        self.time_limit = time_limit
        self.deadline = time.monotonic() + time_limit
        self.exhausted = False

    def expired(self) -> bool:
        if not self.exhausted and time.monotonic() > self.deadline:
            self.exhausted = True
        return self.exhausted
