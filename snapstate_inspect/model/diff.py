"""Step diff: what changed between two steps, in one run or across runs and files (issue 8).

``StepDiffer(options).diff(step_a, step_b)`` → ``StepDiff``:

- the two stacks are matched frame by frame by function and position (a ``difflib`` alignment
  of the function names, outermost first), so a frame present on one side only is reported as
  ``added`` / ``removed``;
- per matched frame, each local is ``added``, ``removed`` or ``changed``; a changed value
  carries its structural changes (``ValueDiff`` from ``value_diff``), with paths like
  ``plan[3]['status']``;
- the step's own values (checkpoint extras, ``return``, ``exception``) are compared the same
  way, as the pseudo-frame ``step values``.

Values whose refs carry the same content hashes (``p`` preview, ``b`` payload) are equal and
skipped without being read. By default previews are diffed (plain data, safe for any file);
``DiffOptions(full_values=True)`` loads payloads through ``Value.load(trust=options.trust)``
(never plain pickle: the trust gate lets a run signed with the user's key through, or any run
when ``trust``) and diffs the objects, falling back to previews, with a note, for values whose
payload is absent, refused by the gate or not loadable. Two big dicts stored chunk by chunk
are diffed from their differing chunks only (``chunk_diff``: the same result, a fraction of
the load). One ``Budget`` (``DiffOptions.time_limit``) bounds a whole step diff: past it, the
remaining values are reported as not compared and the diff is ``partial``.

``StepDiff.identical`` is about state: same stack functions and no variable differences (line
numbers are shown, not counted). JSON form (``to_json``): see ``snapstate_inspect.commands.diff``.
"""

from __future__ import annotations

import difflib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from snapstate_capture import Frame, SnapStateError, Step, UntrustedPayloadError, Value
from snapstate_capture.store.chunk_reader import TracedStep
from snapstate_capture.values.identity import same_objects

from .chunk_diff import diff_chunked
from .traced_state import same_traced_stacks
from .value_diff import Budget, Change, DiffOptions, ValueDiff, diff_objects, diff_previews

STEP_VALUES = "step values"


@dataclass
class VariableDiff:
    """One variable that differs: ``status`` is ``added``, ``removed`` or ``changed``;
    ``old``/``new`` are ``(type, repr)`` (None on the missing side); ``diff`` holds the
    structural changes (paths relative to the variable)."""

    name: str
    status: str
    old: tuple[str, str] | None
    new: tuple[str, str] | None
    diff: ValueDiff = field(default_factory=ValueDiff)

    @property
    def changes(self) -> list[Change]:
        return self.diff.changes

    def to_json(self) -> dict[str, Any]:
        def side(pair: tuple[str, str] | None) -> dict[str, str] | None:
            return {"type": pair[0], "repr": pair[1]} if pair else None
        return {"name": self.name, "status": self.status, "old": side(self.old),
                "new": side(self.new), "changes": [c.to_json(self.name) for c in self.changes],
                "partial": self.diff.partial, "notes": list(self.diff.notes)}


@dataclass
class FrameDiff:
    """A frame of either stack: ``status`` ``same``, ``changed``, ``added`` (only in B) or
    ``removed`` (only in A); ``a_index``/``b_index`` are positions in each stack (outermost 0)."""

    function: str
    status: str
    a_index: int | None
    b_index: int | None
    a_lineno: int | None
    b_lineno: int | None
    variables: list[VariableDiff] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "status": self.status, "a_index": self.a_index,
                "b_index": self.b_index, "a_lineno": self.a_lineno, "b_lineno": self.b_lineno,
                "variables": [v.to_json() for v in self.variables]}


@dataclass
class StepDiff:
    """The difference between step ``a`` and step ``b`` (reader ``Step`` objects)."""

    a: Step
    b: Step
    frames: list[FrameDiff]
    extra: list[VariableDiff]
    mode: str
    partial: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        """Same stack functions and no variable or step-value differences."""
        return not self.extra and all(f.status == "same" for f in self.frames)

    def variables(self) -> list[tuple[str, VariableDiff]]:
        """Every differing variable as ``(frame function, VariableDiff)``, outermost first;
        step values last under ``STEP_VALUES``."""
        out = [(f.function, v) for f in self.frames for v in f.variables]
        return out + [(STEP_VALUES, v) for v in self.extra]

    def to_json(self) -> dict[str, Any]:
        return {"a_step": self.a.index, "b_step": self.b.index, "identical": self.identical,
                "mode": self.mode, "partial": self.partial, "notes": list(self.notes),
                "frames": [f.to_json() for f in self.frames],
                "extra": [v.to_json() for v in self.extra]}


class StepDiffer:
    """Diffs steps under one ``DiffOptions``; caches value and frame comparisons by content hash
    (so aligning two long runs compares each distinct pair of values once)."""

    def __init__(self, options: DiffOptions | None = None) -> None:
        self.options = options or DiffOptions()
        self._values: OrderedDict[tuple, ValueDiff] = OrderedDict()
        #: frame verdicts of ``same_state``: by frame-record keys, or by stored locals
        self._frames: OrderedDict[tuple, bool] = OrderedDict()

    @property
    def mode(self) -> str:
        return "full" if self.options.full_values else "preview"

    # -- whole steps -------------------------------------------------------------------------
    def diff(self, a: Step, b: Step) -> StepDiff:
        """Return the ``StepDiff`` of ``a`` → ``b``. Raises ``SnapStateError`` subclasses only
        for unreadable files (``IntegrityError``, ``TimelineError``)."""
        budget = Budget(self.options.time_limit)
        result = StepDiff(a, b, [], [], self.mode)
        skipped = 0
        for fa, fb, status in match_frames(a.frames, b.frames):
            frame = FrameDiff((fa or fb).function, status, _index(a.frames, fa),  # type: ignore
                              _index(b.frames, fb), fa.lineno if fa else None,
                              fb.lineno if fb else None)
            if fa is not None and fb is not None and fa.key != fb.key:
                frame.variables, count = self._locals(fa.locals, fb.locals, budget)
                skipped += count
                frame.status = "changed" if frame.variables else "same"
            result.frames.append(frame)
        result.extra, count = self._locals(a.extra, b.extra, budget)
        skipped += count
        for var in (v for _, v in result.variables()):
            result.partial = result.partial or var.diff.partial
        if budget.exhausted or skipped:
            result.partial = True
            result.notes.append(f"partial diff: time limit of {self.options.time_limit:g} s "
                                f"reached; {skipped} variables not compared")
        return result

    def same_state(self, a: Step, b: Step, known: frozenset | set = frozenset(),
                   known_refs: frozenset | set = frozenset()) -> bool:
        """True when ``a`` and ``b`` hold the same state, apart from the differences in
        ``known`` (keys from ``change_keys``) and the variables whose content pairs are in
        ``known_refs`` (``(frame, name, digest_a, digest_b)``): e.g. the inputs two runs started
        with. Stops at the first real difference; reads nothing for equal content hashes;
        frame verdicts are cached by frame-record hashes, a traced step's by pairs of stored
        values (``traced_state``; so use one ``known`` per differ)."""
        if a.frame_keys and a.frame_keys == b.frame_keys and _same_values(a.extra, b.extra):
            return True
        if isinstance(a, TracedStep) and isinstance(b, TracedStep):
            return same_traced_stacks(a, b, self._frames, lambda frame, x, y: self.same_locals(
                frame, x, y, known, known_refs)) and self.same_locals(
                    STEP_VALUES, a.extra, b.extra, known, known_refs)
        fa, fb = a.frames, b.frames
        if [f.function for f in fa] != [f.function for f in fb]:
            return False
        for x, y in zip(fa, fb):
            if x.key == y.key:
                continue
            verdict = self._frames.get((x.key, y.key))
            if verdict is None:
                verdict = self.same_locals(x.function, x.locals, y.locals, known, known_refs)
                self._frames[(x.key, y.key)] = verdict
                if len(self._frames) > 100_000:
                    self._frames.popitem(last=False)
            if not verdict:
                return False
        return self.same_locals(STEP_VALUES, a.extra, b.extra, known, known_refs)

    def same_locals(self, frame: str, a: dict[str, Value], b: dict[str, Value],
                    known: frozenset | set, known_refs: frozenset | set) -> bool:
        """True when name -> ``Value`` maps ``a`` and ``b`` (the locals of two frames of
        function ``frame``, or ``STEP_VALUES``) hold the same values apart from ``known`` and
        ``known_refs`` (see ``same_state``); stops at the first real difference."""
        budget = Budget(self.options.time_limit)
        for name in list(a) + [n for n in b if n not in a]:
            va, vb = a.get(name), b.get(name)
            if va is not None and vb is not None:
                if same_content(va, vb) or (frame, name, va.digest, vb.digest) in known_refs:
                    continue
            var = self.diff_value(name, va, vb, budget, summarize=va is None or vb is None)
            if var is not None and not change_keys(frame, var) <= known:
                return False
            if budget.exhausted:
                return False
        return True

    # -- variables ---------------------------------------------------------------------------
    def _locals(self, a: dict[str, Value], b: dict[str, Value], budget: Budget
                ) -> tuple[list[VariableDiff], int]:
        """Differing variables of two name → Value maps (A's order, then B's new names), and
        how many were not compared because the budget ran out."""
        out: list[VariableDiff] = []
        skipped = 0
        for name in list(a) + [n for n in b if n not in a]:
            va, vb = a.get(name), b.get(name)
            if va is not None and vb is not None and same_content(va, vb):
                continue  # equal content hashes: equal values, nothing to read
            if budget.expired():
                skipped += 1
                continue
            var = self.diff_value(name, va, vb, budget)
            if var is not None:
                out.append(var)
        return out, skipped

    def diff_value(self, name: str, a: Value | None, b: Value | None,
                   budget: Budget | None = None, *, summarize: bool = True
                   ) -> VariableDiff | None:
        """Diff one variable; None when equal. ``a``/``b`` None means absent on that side.
        ``summarize=False`` leaves ``old``/``new`` of a changed variable None (saves reads)."""
        if a is None or b is None:
            present = a or b
            assert present is not None
            summary = _summary(present)
            return VariableDiff(name, "removed" if b is None else "added",
                                summary if b is None else None, summary if a is None else None)
        budget = budget or Budget(self.options.time_limit)
        key = (a.digest, a.preview_key, b.digest, b.preview_key)
        diff = self._values.get(key)
        if diff is None:
            diff = self._compare(a, b, budget)
            if not diff.partial:
                self._values[key] = diff
                if len(self._values) > 20_000:
                    self._values.popitem(last=False)
        if diff.empty:
            return None
        if not summarize:
            return VariableDiff(name, "changed", None, None, diff)
        return VariableDiff(name, "changed", _summary(a), _summary(b), diff)

    def _compare(self, a: Value, b: Value, budget: Budget) -> ValueDiff:
        if a.identity and b.identity and a.identity == b.identity:
            return ValueDiff()  # the same value (docs/value-identity.md), whatever the bytes
        if self.options.full_values:
            if a.payload_key and a.payload_key == b.payload_key:
                return ValueDiff()
            lengths = (_top(a).get("len"), _top(b).get("len"))
            chunked = diff_chunked(a, b, lengths, self.options, budget)
            if chunked is not None:
                return chunked  # big dicts: only their differing chunks loaded (chunk_diff)
            loaded = _load_both(a, b, trust=self.options.trust)
            if isinstance(loaded, tuple):
                if same_objects(loaded[0], loaded[1]):
                    return ValueDiff()
                return diff_objects(loaded[0], loaded[1], options=self.options, budget=budget)
            result = self._compare_previews(a, b, budget)
            result.note(f"compared previews: {loaded}")
            return result
        return self._compare_previews(a, b, budget)

    def _compare_previews(self, a: Value, b: Value, budget: Budget) -> ValueDiff:
        if _inline(a) or _inline(b):
            return diff_previews(a.preview, b.preview, options=self.options, budget=budget)
        if a.preview_key == b.preview_key:
            if (a.payload_key != b.payload_key and not _complete(a.preview)
                    and not a.identity):
                # No identity digest (too many parts): the payload bytes alone, which differ
                # between processes for a set's order (pickle writes it as it iterates).
                return ValueDiff([Change("", "hidden", a.repr, b.repr)], notes=[
                    "the payloads differ beyond what the preview shows (a set's order alone "
                    "can make them differ between runs); --full compares the values"])
            return ValueDiff()
        result = diff_previews(*_previews(a, b), options=self.options, budget=budget)
        if result.empty and a.identity != b.identity:
            return ValueDiff([Change("", "hidden", a.repr, b.repr)], notes=[
                "the values differ beyond what the preview shows; --full compares them"])
        return result


def _top(value: Value) -> dict[str, Any]:
    """The stored top node of a preview (type, repr, len; children maybe by reference)."""
    if not value.ref.get("x") and value.preview_key:
        try:
            top = value.timeline.json_blob(value.preview_key)
        except SnapStateError:
            return value.preview
        if isinstance(top, dict):
            return top
    return value.preview


def _summary(value: Value) -> tuple[str, str]:
    """(type, repr) of a value, read from its preview's top node only."""
    top = _top(value)
    return str(top.get("type", "?")), str(top.get("repr", ""))


def _previews(a: Value, b: Value) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both previews; when both are stored with the same children blob (``"kids"``, issue 7's
    children by reference) the children are equal, so they are left out instead of read."""
    top_a, top_b = _top(a), _top(b)
    if not a.ref.get("x") and not b.ref.get("x"):
        if (isinstance(top_a, dict) and isinstance(top_b, dict)
                and isinstance(top_a.get("kids"), str) and top_a.get("kids") == top_b.get("kids")):
            strip = {"children": []}
            return ({k: v for k, v in top_a.items() if k not in _NOT_SHOWN} | strip,
                    {k: v for k, v in top_b.items() if k not in _NOT_SHOWN} | strip)
    return _shown(a.preview), _shown(b.preview)


#: Preview keys that are no part of what a diff shows: the identity digest decides sameness
#: (``_compare``), it is no difference to list; ``kids`` is the children blob's key.
_NOT_SHOWN = frozenset({"kids", "identity"})


def _shown(preview: dict[str, Any]) -> dict[str, Any]:
    if isinstance(preview, dict) and "identity" in preview:
        return {k: v for k, v in preview.items() if k != "identity"}
    return preview


def change_keys(frame: str, var: VariableDiff) -> set[tuple]:
    """Hashable keys naming each difference of one variable in one frame (function name):
    one per structural change, or one for the whole variable when added or removed. Two steps
    with the same keys differ in the same way (used to set aside differences two runs start
    with)."""
    if var.status != "changed" or not var.changes:
        return {(frame, var.name, var.status, var.old, var.new, tuple(var.diff.notes))}
    return {(frame, var.name, c.path, c.kind, c.old, c.new) for c in var.changes}


def without(result: StepDiff, known: set[tuple] | frozenset) -> StepDiff:
    """A copy of ``result`` without the differences whose keys are in ``known``."""
    if not known:
        return result

    def keep(frame: str, var: VariableDiff) -> VariableDiff | None:
        if var.status != "changed" or not var.changes:
            return None if change_keys(frame, var) <= known else var
        changes = [c for c in var.changes
                   if (frame, var.name, c.path, c.kind, c.old, c.new) not in known]
        if not changes:
            return None
        return VariableDiff(var.name, var.status, var.old, var.new,
                            ValueDiff(changes, var.diff.partial, list(var.diff.notes)))

    frames = []
    for frame in result.frames:
        kept = [v for v in (keep(frame.function, var) for var in frame.variables) if v]
        status = frame.status if frame.status in ("added", "removed") else (
            "changed" if kept else "same")
        frames.append(FrameDiff(frame.function, status, frame.a_index, frame.b_index,
                                frame.a_lineno, frame.b_lineno, kept))
    extra = [v for v in (keep(STEP_VALUES, var) for var in result.extra) if v]
    return StepDiff(result.a, result.b, frames, extra, result.mode, result.partial,
                    list(result.notes))


def match_frames(a: tuple[Frame, ...], b: tuple[Frame, ...]
                 ) -> list[tuple[Frame | None, Frame | None, str]]:
    """Pair the frames of two stacks (outermost first) by function name and position.

    Returns ``(frame_a, frame_b, status)`` in stack order, ``status`` being ``same`` for a pair
    (refined to ``changed`` by the caller), ``removed`` for a frame only in ``a`` and ``added``
    for one only in ``b``.
    """
    names_a, names_b = [f.function for f in a], [f.function for f in b]
    out: list[tuple[Frame | None, Frame | None, str]] = []
    matcher = difflib.SequenceMatcher(None, names_a, names_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend((a[i], b[j], "same") for i, j in zip(range(i1, i2), range(j1, j2)))
        else:
            out.extend((a[i], None, "removed") for i in range(i1, i2))
            out.extend((None, b[j], "added") for j in range(j1, j2))
    return out


def _index(frames: tuple[Frame, ...], frame: Frame | None) -> int | None:
    if frame is None:
        return None
    for i, f in enumerate(frames):
        if f is frame:
            return i
    return None


def _inline(value: Value) -> bool:
    """A scalar stored in its ref as plain data (traced runs), with no preview blob."""
    return bool(getattr(value, "is_inline", False))


def same_content(a: Value, b: Value) -> bool:
    """True when two values' refs name the same content (equal hashes, or equal inline
    scalars of the same type): equal values, without reading either."""
    if _inline(a) or _inline(b):
        return _inline(a) and _inline(b) and a.digest == b.digest
    return a.ref == b.ref


def _same_values(a: dict[str, Value], b: dict[str, Value]) -> bool:
    return a.keys() == b.keys() and all(same_content(v, b[k]) for k, v in a.items())


def _complete(preview: dict[str, Any]) -> bool:
    """True when a preview shows its whole value: nothing cut by item, depth or length bounds."""
    stack = [preview]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict) or node.get("more") or node.get("truncated"):
            return False
        if "children" not in node and str(node.get("repr", "")).endswith("…"):
            return False
        stack.extend(c[1] for c in node.get("children") or () if isinstance(c, list)
                     and len(c) == 2)
    return True


def _load_both(a: Value, b: Value, *, trust: bool) -> tuple[Any, Any] | str:
    """Load both payloads through the trust gate; a reason string when either cannot be."""
    loaded = []
    for value in (a, b):
        if not value.has_payload:
            reason = (value.preview.get("placeholder") or {}).get("reason", "no payload stored")
            return f"{value.name} has no payload ({reason})"
        try:
            loaded.append(value.load(trust=trust))
        except UntrustedPayloadError:
            return ("payloads not loaded: the run is not signed with your key "
                    "(--trust if you trust the file)")
        except SnapStateError as exc:
            return str(exc)
    return loaded[0], loaded[1]
