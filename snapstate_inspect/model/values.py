"""Variables of a frame as the inspector shows them: previews, change marks, pages (UI-free).

- ``VariableKey`` names a variable across steps: the frame's position on the stack (0 = the
  outermost), that frame's function, and the variable's name.
- ``frame_changes(current, previous)`` marks each local ``added`` / ``changed`` / ``removed`` /
  ``same`` against the same frame at the previous step, comparing content hashes only (no
  preview is read).
- ``PreviewLoader`` reads previews without freezing a UI: a preview blob larger than
  ``LARGE_PREVIEW`` bytes is decoded in pieces (``piecewise_json.py``: one ``json.loads`` call
  holds the GIL for the whole document; a hostile 10 MB preview would stall the event loop for
  a quarter of a second or more); given the app's ``Activity`` it also waits while a person is
  using the UI (``model/background.py``).
- ``child_page(preview, offset)`` cuts a container's children into pages of ``PAGE`` rows, so
  a preview with 200,000 children shows 100 at a time.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from snapstate_capture import Frame, Run, SnapStateError, Value

from . import piecewise_json
from .background import Activity

ADDED, CHANGED, REMOVED, SAME = "added", "changed", "removed", "same"
#: What a frame of the code that submitted a step's thread-pool call shows instead of locals
#: (``Frame.submitted``: another thread's frame, as it was at the submit).
SUBMITTED_FRAME = "(submitted this pool call: its locals are not kept)"
LARGE_PREVIEW = 256 * 1024
PAGE = 100


@dataclass(frozen=True)
class VariableKey:
    """A variable followed across steps: frame ``position`` (0 = outermost), ``function``, ``name``.

    ``path`` is the label path inside the value (``("['k']", "[3]")``), empty for the variable.
    """

    position: int
    function: str
    name: str
    path: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        return self.name + "".join(self.path)


def value_digest(value: Value) -> str:
    """Identity of a captured value's content (payload hash, else preview hash)."""
    return value.digest


def frame_changes(current: Frame, previous: Frame | None) -> dict[str, str]:
    """Map each local of ``current`` (and each one gone since ``previous``) to its change mark.

    With no ``previous`` frame (a new call) every local is ``added``. Removed names come last.
    """
    if previous is None:
        return {name: ADDED for name in current.locals}
    before = {name: value_digest(v) for name, v in previous.locals.items()}
    marks = {}
    for name, value in current.locals.items():
        if name not in before:
            marks[name] = ADDED
        elif before[name] != value_digest(value):
            marks[name] = CHANGED
        else:
            marks[name] = SAME
    for name in before:
        if name not in marks:
            marks[name] = REMOVED
    return marks


def matching_frame(run: Run, step_index: int, position: int, function: str) -> Frame | None:
    """The frame at ``position`` of step ``step_index`` if it runs ``function``, else None."""
    if step_index < 0:
        return None
    try:
        frames = run.steps[step_index].frames
    except (IndexError, SnapStateError):
        return None
    if position < len(frames) and frames[position].function == function:
        return frames[position]
    return None


class PreviewLoader:
    """Reads value previews with an LRU cache of ``size`` entries; thread-safe; never raises.

    A preview that cannot be read (missing or corrupt blob) comes back as
    ``{"type": "?", "repr": "<unreadable preview: …>", "error": message}``.
    """

    def __init__(self, size: int = 512, activity: Activity | None = None) -> None:
        self.size = size
        self.activity = activity  # large previews decoded off the UI thread wait while it is used
        self._cache: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every cached preview."""
        with self._lock:
            self._cache.clear()

    def cached(self, value: Value) -> dict[str, Any] | None:
        """The preview if it is already in memory (cheap), else None."""
        if value.is_inline:  # a scalar stored in a traced step itself: its preview is built here
            return value.preview
        key = value.preview_key or f"inline:{value.digest}"
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
            return found

    def quick(self, values: list[Value], budget: int = 2 * LARGE_PREVIEW) -> bool:
        """True when every preview of ``values`` is cached or small (together under ``budget``
        bytes), so reading them now cannot stall a UI. Reads sizes only (one query per level:
        the stored top nodes, then the children blobs they name)."""
        stored = [v for v in values if _stored(v) and self.cached(v) is None]
        if not stored:
            return True
        timeline = stored[0].timeline
        try:
            sizes = timeline.blob_sizes([v.preview_key for v in stored])
            if any(size > LARGE_PREVIEW for size in sizes.values()):
                return False
            kids = [k for k in (self._kids_key(v) for v in stored) if k]
            kid_sizes = timeline.blob_sizes(kids) if kids else {}
        except SnapStateError:
            return False
        return (all(size <= LARGE_PREVIEW for size in kid_sizes.values())
                and sum(sizes.values()) + sum(kid_sizes.values()) <= budget)

    def _kids_key(self, value: Value) -> str | None:
        top = self._decode(value.timeline.blob(value.preview_key or ""))
        kids = top.get("kids") if isinstance(top, dict) else None
        return kids if isinstance(kids, str) else None

    def _decode(self, raw: bytes) -> Any:
        text = raw.decode("utf-8")
        if len(raw) <= LARGE_PREVIEW:
            return json.loads(text)
        return piecewise_json.loads(text, self.activity.step_aside if self.activity else None)

    def load(self, value: Value) -> dict[str, Any]:
        """The preview of ``value`` (reads and decodes it when not cached)."""
        found = self.cached(value)
        if found is not None:
            return found
        try:
            if _stored(value):
                data = self._decode(value.timeline.blob(value.preview_key or ""))
                if isinstance(data, dict) and isinstance(data.get("kids"), str):
                    # children stored in their own blob (snapstate_capture/store/previews.py)
                    kids = self._decode(value.timeline.blob(data["kids"]))
                    data = {k: v for k, v in data.items() if k != "kids"}
                    data["children"] = kids if isinstance(kids, list) else []
            else:
                data = value.preview  # inline or sealed: small, built by the reader
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except (SnapStateError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            data = {"type": "?", "repr": f"<unreadable preview: {exc}>", "error": str(exc)}
        key = value.preview_key or f"inline:{value.digest}"
        with self._lock:
            self._cache[key] = data
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return data


def _stored(value: Value) -> bool:
    """True for a preview kept as a blob of its own (not inline, not sealed)."""
    return bool(value.preview_key) and not getattr(value, "is_inline", False) \
        and not value.ref.get("x")


def children(preview: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The preview's ``(label, child preview)`` pairs, skipping malformed entries."""
    out = []
    for item in preview.get("children") or ():
        if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[1], dict):
            out.append((str(item[0]), item[1]))
    return out


def child_page(preview: dict[str, Any], offset: int = 0, size: int = PAGE
               ) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """Children ``offset`` … ``offset + size - 1`` and how many come after this page."""
    kids = children(preview)
    page = kids[offset:offset + size]
    return page, max(len(kids) - offset - len(page), 0)


def child_changes(current: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, str]:
    """Change marks of ``current``'s children against ``previous`` (same value, earlier step),
    matched by label; children gone since are ``removed``."""
    if previous is None:
        return {}
    before = dict(children(previous))
    marks = {}
    for label, child in children(current):
        old = before.get(label)
        marks[label] = ADDED if old is None else (SAME if old == child else CHANGED)
    for label in before:
        if label not in marks:
            marks[label] = REMOVED
    return marks


def is_container(preview: dict[str, Any]) -> bool:
    """True when the preview has children to expand (or had some cut off)."""
    return bool(preview.get("children")) or bool(preview.get("more")) or bool(
        preview.get("truncated"))
