"""Structural diff of two captured values, built on deepdiff, pruned by cheap equality, guarded.

``diff_previews(a, b)`` compares two previews (plain JSON from the file: safe for any file);
``diff_objects(a, b)`` compares two loaded payloads (the "full values" mode, after the trust
check). Both return a ``ValueDiff``: a list of ``Change(path, kind, old, new)`` where ``path`` is
the suffix below the value (``[3]['status']``, ``.reply``; ``""`` is the value itself), in the
preview's own label syntax (``snapstate_capture.values.preview``).

How it stays fast (issue 8, point 5): equal subtrees are skipped by one C-level ``==`` (for
previews, dict equality of the JSON; for objects, guarded ``==``), big dicts and lists are walked
here child by child (lists trimmed to their differing middle first, so an append costs one
comparison), and only the differing small subtrees are handed to DeepDiff.

Guards (issue 8, point 1): NaN equals NaN (``ignore_nan_inequality`` and our own equality);
numpy arrays compare with ``array_equal`` and report differing indices; items need not be
hashable; strings longer than ``DiffOptions.max_string`` are compared directly, never diffed line
by line; a ``Budget`` (time limit and change cap) stops the walk and DeepDiff itself (through a
custom operator that gives up at the deadline), marking the result ``partial`` with a note;
an exception inside DeepDiff falls back to comparing reprs, and says so.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

from deepdiff import DeepDiff
from deepdiff.operator import BaseOperatorPlus
from rapidfuzz.distance import Indel

from snapstate_capture.values import safe_repr

from .value_changes import Budget, Change, DiffOptions, ValueDiff
from .value_sides import (PARTIAL_PREVIEW, ObjectSide, PreviewSide, normalize_repr,
                          objects_equal, short_type, type_name)

__all__ = ["Budget", "Change", "DiffOptions", "ValueDiff", "diff_maps", "diff_objects",
           "diff_previews", "normalize_repr", "objects_equal"]

#: Items compared per C-level slice comparison before looking at single items.
CHUNK = 256
#: Largest differing list middle (items of A × items of B) aligned by LCS; beyond, by position.
MAX_ALIGN_CELLS = 4_000_000


class _GiveUpAtDeadline(BaseOperatorPlus):
    """A DeepDiff custom operator that matches every level once the budget ran out and gives up
    diffing it, so DeepDiff returns promptly with what it found (deepdiff's documented
    ``custom_operators`` hook: ``match(level)`` then ``give_up_diffing(level, diff)``)."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    def match(self, level: Any) -> bool:
        return self.budget.expired()

    def give_up_diffing(self, level: Any, diff_instance: Any) -> bool:
        return True

    def normalize_value_for_hashing(self, parent: Any, obj: Any) -> Any:
        return obj


# --- the walk ---------------------------------------------------------------------------------

class _Differ:
    """One value diff: walks big or uneven containers, hands small differing pairs to DeepDiff."""

    def __init__(self, side: Any, options: DiffOptions, budget: Budget) -> None:
        self.side = side
        self.options = options
        self.budget = budget
        self.out = ValueDiff()

    def full(self) -> bool:
        """True (and the result marked partial, with a note) once a bound is reached."""
        if len(self.out.changes) >= self.options.max_changes:
            self.out.partial = True
            self.out.note(f"partial diff: stopped at {self.options.max_changes} changes")
            return True
        if self.budget.expired():
            self.out.partial = True
            self.out.note(f"partial diff: time limit of {self.budget.time_limit:g} s reached")
            return True
        return False

    def walk(self, a: Any, b: Any, path: str) -> None:
        if self.full() or self.side.equal(a, b):
            return
        try:
            self._dispatch(a, b, path)
        except Exception as exc:  # noqa: BLE001 - a loaded object's own methods may raise
            self.out.note(f"{path or 'value'}: could not walk ({type(exc).__name__}: "
                          f"{_clip(str(exc), 80)}); compared reprs")
            self._changed(a, b, path, note=None)

    def _big(self, a: Any, b: Any) -> bool:
        limit = self.options.small
        try:
            return self.side.size(a, limit) > limit or self.side.size(b, limit) > limit
        except Exception:  # noqa: BLE001 - iterating a hostile container: let DeepDiff try
            return False

    def _dispatch(self, a: Any, b: Any, path: str) -> None:
        side = self.side
        ka, kb = side.kind(a), side.kind(b)
        if ka == kb and ka in ("map", "object") and self._big(a, b):
            self._walk_map(a, b, path, ka)
        elif ka == kb == "seq" and (self._big(a, b) or _length(a) != _length(b)):
            self._walk_seq(a, b, path)
        elif ka == kb == "text" and max(len(a), len(b)) > self.options.max_string:
            self._changed(a, b, path, note=_first_difference(a, b))
        elif ka == kb == "ndarray":
            self._walk_array(a, b, path)
        elif ka == kb == "set" and max(len(a), len(b)) > self.options.small:
            self._walk_set(a, b, path)
        elif side.scalar(a) and side.scalar(b):
            self._changed(a, b, path, note=None)  # two differing leaves: nothing to walk
        else:
            self.deepdiff(a, b, path)

    def _meta(self, a: Any, b: Any, path: str) -> None:
        found, partial_preview = self.side.meta(a, b)
        for kind, old, new in found:
            typed = kind == "type"
            self.out.changes.append(Change(path, kind, short_type(old) if typed else old,
                                           short_type(new) if typed else new,
                                           old if typed else None, new if typed else None))
        if partial_preview:
            self.out.note(PARTIAL_PREVIEW)

    def _walk_map(self, a: Any, b: Any, path: str, kind: str) -> None:
        side = self.side
        keys_a, values_a = side.entries(a)
        keys_b, values_b = side.entries(b)
        if keys_a == keys_b:  # the usual case: same keys, same order; C-level comparisons
            for i in self._differing(values_a, values_b):
                self.walk(values_a[i], values_b[i], path + side.label(kind, keys_a[i]))
        else:
            where_b = {key: j for j, key in enumerate(keys_b)}
            for i, key in enumerate(keys_a):
                if self.full():
                    return
                j = where_b.get(key)
                if j is None:
                    self._one_sided("removed", values_a[i], path + side.label(kind, key))
                elif values_a[i] is not values_b[j]:
                    self.walk(values_a[i], values_b[j], path + side.label(kind, key))
            known = set(where_b).intersection(keys_a) if len(keys_a) < 10_000 else set(keys_a)
            for j, key in enumerate(keys_b):
                if key not in known and not self.full():
                    self._one_sided("added", values_b[j], path + side.label(kind, key))
        self._meta(a, b, path)

    def _differing(self, xs: list, ys: list) -> Iterator[int]:
        """Indices ``i < min(len)`` where ``xs[i]`` and ``ys[i]`` differ: slices of ``CHUNK``
        items are compared by C-level ``==`` first, single items only inside unequal slices."""
        equal = self.side.equal
        for start in range(0, min(len(xs), len(ys)), CHUNK):
            if self.full():
                return
            end = start + CHUNK
            try:
                if xs[start:end] == ys[start:end]:
                    continue
            except Exception:  # noqa: BLE001 - e.g. numpy arrays inside: look item by item
                pass
            for i in range(start, min(end, len(xs), len(ys))):
                if xs[i] is not ys[i] and not equal(xs[i], ys[i]):
                    yield i

    def _walk_seq(self, a: Any, b: Any, path: str) -> None:
        xs, ys = self.side.elements(a), self.side.elements(b)
        if len(xs) == len(ys):
            for i in self._differing(xs, ys):
                self.walk(xs[i], ys[i], f"{path}[{i}]")
        else:
            prefix = next(self._differing(xs, ys), min(len(xs), len(ys)))
            suffix = self._common_suffix(xs[prefix:], ys[prefix:])
            self._walk_middle(xs[prefix:len(xs) - suffix], ys[prefix:len(ys) - suffix],
                              prefix, path)
        self._meta(a, b, path)

    def _common_suffix(self, xs: list, ys: list) -> int:
        n, limit, equal = 0, min(len(xs), len(ys)), self.side.equal
        while n < limit:
            size = min(CHUNK, limit - n)
            try:
                if xs[len(xs) - n - size:len(xs) - n] == ys[len(ys) - n - size:len(ys) - n]:
                    n += size
                    continue
            except Exception:  # noqa: BLE001 - compare item by item below
                pass
            for _ in range(size):
                x, y = xs[len(xs) - n - 1], ys[len(ys) - n - 1]
                if x is not y and not equal(x, y):
                    return n
                n += 1
        return n

    def _walk_middle(self, xs: list, ys: list, offset: int, path: str) -> None:
        """Align the differing middles of two lists (LCS over item fingerprints, so items
        need not be hashable), then report inserted and removed items and walk paired ones."""
        if xs and ys and len(xs) * len(ys) <= MAX_ALIGN_CELLS:
            fingerprint = self.side.fingerprint
            blocks = [(op.tag, op.src_start, op.src_end, op.dest_start, op.dest_end) for op in
                      Indel.opcodes([fingerprint(x) for x in xs], [fingerprint(y) for y in ys])]
        else:
            blocks = [("pair", 0, len(xs), 0, len(ys))]
        pending: list[tuple[int, int]] = []  # deleted A items waiting for inserted B items
        for tag, i1, i2, j1, j2 in blocks:
            if self.full():
                return
            if tag == "equal":
                self._flush(pending, xs, offset, path)
                for i, j in zip(range(i1, i2), range(j1, j2)):
                    self.walk(xs[i], ys[j], f"{path}[{offset + i}]")
            elif tag == "delete":
                pending.extend((i, -1) for i in range(i1, i2))
            else:  # insert (or "pair": everything left over)
                pending.extend((i, -1) for i in range(i1, i2))
                removed = [i for i, _ in pending]
                pending.clear()
                for k, j in enumerate(range(j1, j2)):
                    if k < len(removed):
                        self.walk(xs[removed[k]], ys[j], f"{path}[{offset + removed[k]}]")
                    else:
                        self._one_sided("added", ys[j], f"{path}[{offset + j}]")
                pending.extend((i, -1) for i in removed[j2 - j1:])
        self._flush(pending, xs, offset, path)

    def _flush(self, pending: list[tuple[int, int]], xs: list, offset: int, path: str) -> None:
        for i, _ in pending:
            if self.full():
                break
            self._one_sided("removed", xs[i], f"{path}[{offset + i}]")
        pending.clear()

    def _walk_array(self, a: Any, b: Any, path: str) -> None:
        numpy = sys.modules["numpy"]
        if a.shape != b.shape or a.dtype != b.dtype:
            self._changed(a, b, path, note=None)
            return
        try:
            diff = ~((a == b) | (numpy.isnan(a) & numpy.isnan(b)))
        except TypeError:  # not a float dtype
            diff = a != b
        for index in numpy.argwhere(diff)[: self.options.max_changes]:
            key = tuple(int(i) for i in index)
            self.out.changes.append(Change(
                path + "".join(f"[{i}]" for i in key), "changed",
                safe_repr(a[key].item(), self.options.max_repr),
                safe_repr(b[key].item(), self.options.max_repr)))
        self.full()

    def _walk_set(self, a: Any, b: Any, path: str) -> None:
        for kind, items in (("removed", a - b), ("added", b - a)):
            for item in list(items)[: self.options.max_changes]:
                self._one_sided(kind, item, path + "{" + safe_repr(item, 80) + "}")
        self.full()

    def _one_sided(self, kind: str, value: Any, path: str) -> None:
        text = _clip(self.side.summary(value)[1], self.options.max_repr)
        self.out.changes.append(Change(path, kind, *((text, None) if kind == "removed"
                                                     else (None, text))))

    def _changed(self, a: Any, b: Any, path: str, note: str | None) -> None:
        (ta, ra), (tb, rb) = self.side.summary(a), self.side.summary(b)
        limit = self.options.max_repr
        old, new = _clip(ra, limit), _clip(rb, limit)
        previews = isinstance(self.side, PreviewSide)
        la, lb = _length_of(a), _length_of(b)
        if ta == tb and old == new and (previews or (la is not None and la != lb)):
            # The text shown is the same: say what differs instead — the lengths, else (a
            # preview) that it is past the text shown; loaded values' note says where.
            if la is not None and lb is not None and la != lb:
                self.out.changes.append(Change(path, "len", str(la), str(lb)))
            else:
                self.out.changes.append(Change(path, "hidden", old, new))
            if note is None and previews:
                note = ("the previews begin with the same text; --full compares the whole "
                        "values")
        elif ta == tb:
            self.out.changes.append(Change(path, "changed", old, new))
        else:
            self.out.changes.append(Change(path, "type", _clip(ra, limit), _clip(rb, limit),
                                           ta, tb))
        if note:
            self.out.note(f"{path or 'value'}: {note}")

    def deepdiff(self, a: Any, b: Any, path: str) -> None:
        """Hand one differing pair to DeepDiff; on any exception inside it, compare reprs."""
        side = self.side
        try:
            result = DeepDiff(side.plain(a), side.plain(b), view="tree",
                              threshold_to_diff_deeper=0, ignore_nan_inequality=True,
                              custom_operators=[_GiveUpAtDeadline(self.budget)], verbose_level=2)
        except Exception as exc:  # noqa: BLE001 - deepdiff raising on odd objects: fall back
            self.out.note(f"{path or 'value'}: deepdiff failed ({type(exc).__name__}: "
                          f"{_clip(str(exc), 80)}); compared reprs")
            (_, ra), (_, rb) = side.summary(a), side.summary(b)
            if normalize_repr(ra) != normalize_repr(rb):
                self._changed(a, b, path, note=None)
            return
        start = len(self.out.changes)
        for report, levels in result.items():
            kind = _REPORT_KINDS.get(report)
            for level in levels if kind is not None else ():
                self._record(kind, level, path)
        self.out.changes[start:] = sorted(self.out.changes[start:], key=_path_order)
        if self.budget.exhausted:
            self.full()

    def _record(self, kind: str, level: Any, path: str) -> None:
        if len(self.out.changes) >= self.options.max_changes:
            self.full()
            return
        side = self.side
        sub, meta = side.level_path(level)
        t1, t2 = level.t1, level.t2
        old_type, old = side.value_text(t1) if type(t1).__name__ != "NotPresent" else (None, None)
        new_type, new = side.value_text(t2) if type(t2).__name__ != "NotPresent" else (None, None)
        if meta == "len":
            kind = "len"
            self.out.note(PARTIAL_PREVIEW)
        elif meta == "type":
            kind, old_type, new_type = "type", old, new
            old, new = short_type(old), short_type(new)
        elif kind in ("changed", "type"):
            if isinstance(side, ObjectSide):
                old_type, new_type = type_name(t1), type_name(t2)
            kind = "type" if old_type and new_type and old_type != new_type else "changed"
        limit = self.options.max_repr
        typed = kind == "type"
        self.out.changes.append(Change(path + sub, kind, _clip(old, limit), _clip(new, limit),
                                       old_type if typed else None, new_type if typed else None))


_REPORT_KINDS = {
    "values_changed": "changed", "type_changes": "type",
    "dictionary_item_added": "added", "dictionary_item_removed": "removed",
    "iterable_item_added": "added", "iterable_item_removed": "removed",
    "attribute_added": "added", "attribute_removed": "removed",
    "set_item_added": "added", "set_item_removed": "removed",
}


def _length(value: Any) -> int | None:
    try:
        children = value.get("children") if isinstance(value, dict) else None
        return len(children) if isinstance(children, list) else len(value)
    except Exception:  # noqa: BLE001 - a hostile __len__
        return None


def _path_order(change: Change) -> list:
    """Natural order of paths: ``[2]`` before ``[10]``."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", change.path)]


def _length_of(node: Any) -> int | None:
    """The length a value's side knows: a preview's ``len``, a loaded string's or bytes'."""
    if isinstance(node, dict):
        found = node.get("len")
        return found if type(found) is int else None
    if isinstance(node, (str, bytes)):
        return len(node)
    return None


def _first_difference(a: Any, b: Any) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"long strings ({len(a)} and {len(b)} characters) first differ at offset {i}"
    return f"long strings: one is a prefix of the other ({len(a)} and {len(b)} characters)"


def _clip(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def diff_previews(a: dict[str, Any], b: dict[str, Any], *, options: DiffOptions | None = None,
                  budget: Budget | None = None) -> ValueDiff:
    """Diff two previews (``Value.preview`` dicts); reads no payload, runs no code from a file.

    Returns a ``ValueDiff`` whose change paths are label suffixes below the value. Never raises
    for any JSON input: a malformed preview compares as its repr.
    """
    options = options or DiffOptions()
    differ = _Differ(PreviewSide(options.max_repr), options,
                     budget or Budget(options.time_limit))
    differ.walk(a if isinstance(a, dict) else {"repr": str(a)},
                b if isinstance(b, dict) else {"repr": str(b)}, "")
    return differ.out


def diff_objects(a: Any, b: Any, *, options: DiffOptions | None = None,
                 budget: Budget | None = None) -> ValueDiff:
    """Diff two loaded Python objects (the "full values" mode; the caller did the trust check).

    Same result shape as ``diff_previews``, paths in the same syntax (``['plan'][3]['status']``,
    ``.attr``). Nothing from the objects' own code escapes: ``__eq__``, iteration and ``repr``
    are guarded, and a DeepDiff failure falls back to comparing reprs, with a note.
    """
    options = options or DiffOptions()
    differ = _Differ(ObjectSide(options.max_repr), options, budget or Budget(options.time_limit))
    differ.walk(a, b, "")
    return differ.out


def diff_maps(a: dict, b: dict, *, options: DiffOptions | None = None,
              budget: Budget | None = None) -> ValueDiff:
    """``diff_objects`` of two dicts as if they were big (more than ``DiffOptions.small``
    nodes): walked key by key whatever their size. For the differing parts of two big dicts
    (``chunk_diff``), so the changes are those the whole dicts give. Raises what walking the
    dicts' keys raises (the caller then diffs the whole values)."""
    options = options or DiffOptions()
    differ = _Differ(ObjectSide(options.max_repr), options, budget or Budget(options.time_limit))
    if not differ.full() and not differ.side.equal(a, b):
        differ._walk_map(a, b, "", "map")
    return differ.out
