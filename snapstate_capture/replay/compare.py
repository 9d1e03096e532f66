"""Comparing a replayed step with the recorded one: kind, label, stack, lines, value digests.

Two values match in the one sense of ``values.identity`` (docs/value-identity.md): equal
digests (payload hash, else preview hash), else equal identity digests (stored in previews at
capture); a value too big for a digest at capture is compared by loading the recorded payload
(replay runs with trust) and walking both sides in full — never by ``==``; values without a
payload match when their previews are equal once memory addresses are blanked. Source and code hashes are not compared here: code drift is
reported before replay starts (``drift.py``).
"""

from __future__ import annotations

import json
import os
import types
from typing import Any

from ..capture.step_capture import PreviewOnly
from ..options import ValueOptions
from ..store import previews
from ..store.reader import Step, Timeline, Value
from ..store.step_record import StepRecord
from ..values import capture_value
from ..values.addresses import text_without_addresses
from ..values.identity import same_objects
from ..values.preview import PreviewBuilder
from .relocate import Relocation
from .report import diff_previews, divergence, normalize, step_facts

#: Variables listed per divergence report.
MAX_VARIABLES = 12


class StepComparer:
    """Compares live ``StepRecord``s with a recorded run's steps.

    ``cwd``: the recording's working directory, against which relative filenames in the
    recording are resolved; ``relocation`` maps them to where the replay runs.
    """

    def __init__(self, timeline: Timeline, cwd: str,
                 relocation: Relocation | None = None, lines: Any = None) -> None:
        self.timeline = timeline
        self.cwd = cwd
        self.relocation = relocation or Relocation(cwd, cwd)
        #: ``linemap.LineMaps`` when the code changed inside ``patched`` blocks: recorded line
        #: numbers are compared where those lines are now.
        self.lines = lines

    def _path(self, filename: str | None) -> str | None:
        if not filename or filename.startswith("<"):
            return filename
        return self.relocation.path(os.path.normpath(os.path.join(self.cwd, filename)))

    def compare(self, recorded: Step, record: StepRecord, live_frames: list[types.FrameType],
                live_extra: dict[str, Any] | None, *, served_exception: bool = False
                ) -> dict[str, Any] | None:
        """Return a divergence report, or None when the live step matches ``recorded``.

        ``served_exception``: the step is an exception raised by an effect served from the
        journal; the recorded stack then also holds the effect function's own frame, which
        did not run on replay, so only the frames both have are compared.
        """
        index = recorded.index
        expected = step_facts(recorded.kind, recorded.label, recorded.function,
                              recorded.filename, recorded.lineno)
        actual = step_facts(record.kind, record.label, record.function, record.filename,
                            record.lineno)
        if recorded.kind != record.kind:
            return divergence(index, "kind", f"expected {_step_words(recorded.kind)}, the "
                              f"program reached {_step_words(record.kind)}", expected=expected,
                              actual=actual)
        if recorded.label != record.label:
            return divergence(index, "label", f"expected label {recorded.label!r}, got "
                              f"{record.label!r}", expected=expected, actual=actual)
        if recorded.frame_keys == record.frames and recorded._extra_refs == record.extra:
            return None  # identical frame records: same code, lines and values
        rec_frames = [self.timeline.json_blob(key) for key in recorded.frame_keys]
        act_frames = [json.loads(record.blobs[key]) for key in record.frames]
        if served_exception and len(rec_frames) > len(act_frames):
            rec_frames = rec_frames[:len(act_frames)]
        if len(rec_frames) != len(act_frames):
            return divergence(
                index, "stack", f"expected {len(rec_frames)} frames on the stack "
                f"({_chain(rec_frames)}), the program has {len(act_frames)} "
                f"({_chain(act_frames)})", expected=expected, actual=actual)
        variables: list[dict[str, Any]] = []
        live_ok = len(live_frames) == len(act_frames)
        for position, (rec, act) in enumerate(zip(rec_frames, act_frames)):
            if (rec.get("function") != act.get("function")
                    or self._path(rec.get("filename")) != _live_path(act.get("filename"))):
                return divergence(index, "stack", f"frame #{position}: expected "
                                  f"{rec.get('function')}, the program is in "
                                  f"{act.get('function')}", expected=expected, actual=actual)
            innermost = position == len(act_frames) - 1
            rec_line = recorded.lineno if innermost and not served_exception else rec.get("lineno")
            act_line = record.lineno if innermost and not served_exception else act.get("lineno")
            if self.lines is not None:
                rec_line = self.lines.line(rec.get("source"), self._path(rec.get("filename")),
                                           rec_line)
            if rec_line != act_line:
                return divergence(index, "line", f"{act.get('function')}: expected line "
                                  f"{rec_line}, the program is at line {act_line}",
                                  expected=expected, actual=actual)
            if act.get("submitted") is True:
                continue  # another thread's frame, kept without locals (``capture.frames``)
            live = live_frames[position].f_locals if live_ok else None
            self._compare_values(act.get("function", "?"), _refs(rec.get("locals")),
                                 _refs(act.get("locals")), live, record.blobs, variables)
        if not served_exception:
            extra_live = {k: (v.value if isinstance(v, PreviewOnly) else v)
                          for k, v in (live_extra or {}).items()}
            self._compare_values("(step values)", recorded._extra_refs, record.extra,
                                 extra_live, record.blobs, variables)
        if variables:
            names = ", ".join(v["name"] for v in variables[:5])
            return divergence(index, "value", f"{len(variables)} value(s) differ: {names}",
                              expected=expected, actual=actual, variables=variables)
        return None

    def _compare_values(self, frame: str, rec_refs: dict[str, Any], act_refs: dict[str, Any],
                        live: dict[str, Any] | None, blobs: dict[str, bytes],
                        out: list[dict[str, Any]]) -> None:
        for name in list(rec_refs) + [n for n in act_refs if n not in rec_refs]:
            if len(out) >= MAX_VARIABLES:
                return
            rec, act = rec_refs.get(name), act_refs.get(name)
            if rec is not None and act is not None and self.same_value(
                    name, rec, act, live, blobs):
                continue
            exp_preview = self._preview(rec, None)
            act_preview = (self._preview(act, blobs) or self._live_preview(name, live)
                           if act is not None else None)
            out.append({"frame": frame, "name": name,
                        "expected": exp_preview.get("repr") if exp_preview else "(absent)",
                        "actual": act_preview.get("repr") if act_preview else "(absent)",
                        "diff": diff_previews(exp_preview, act_preview)})

    def same_value(self, name: str, rec: dict[str, Any], act: dict[str, Any],
                   live: dict[str, Any] | None, blobs: dict[str, bytes]) -> bool:
        """True when recorded ref ``rec`` and live ref ``act`` hold the same value, in the one
        sense of ``values.identity`` (docs/value-identity.md): equal digests; else the identity
        digests both previews carry; else — a value too big for a digest at capture — the
        recorded payload loaded (replay runs with trust) and both sides walked in full; a
        value without payload by its preview (memory addresses blanked). Inline scalars
        (format 4 on) compare as ``Value.digest`` does."""
        if "v" in rec or "v" in act:
            if "v" in rec and "v" in act:
                return inline_digest(rec["v"]) == inline_digest(act["v"])
            return normalize(self._preview(rec, None)) == normalize(self._preview(act, blobs))
        if (rec.get("b") or rec.get("p")) == (act.get("b") or act.get("p")):
            return True
        exp = self._preview(rec, None)
        got = self._preview(act, blobs) or self._live_preview(name, live)
        if _machinery(exp) and _machinery(got):
            return True  # framework machinery (a compiled graph, an agent) is not state
        known = _identity(exp), _identity(got)
        if known[0] and known[1]:
            return known[0] == known[1]
        if not rec.get("b") or not act.get("b"):
            if rec.get("b") or act.get("b"):
                return False
            return normalize(_without_identity(exp)) == normalize(_without_identity(got))
        if live is None or name not in live or not self.timeline.trust:
            return False
        try:
            loaded = Value(self.timeline, name, rec).load(trust=True)
        except Exception:  # noqa: BLE001 - an unloadable value is reported, not raised
            return False
        return same_objects(loaded, live[name])

    @staticmethod
    def _live_preview(name: str, live: dict[str, Any] | None) -> dict[str, Any] | None:
        """The preview (with its identity digest) of the live value ``name``, for a live ref
        whose blobs are not in this step's record: the value cache took its capture from an
        earlier replayed step, unchanged since (its blobs went with that step). None when the
        live value is not at hand."""
        if live is None or name not in live:
            return None
        return capture_value(live[name], name=name, options=ValueOptions(),
                             payloads=False).preview

    def _preview(self, ref: dict[str, Any] | None, blobs: dict[str, bytes] | None
                 ) -> dict[str, Any] | None:
        """The preview of a recorded ref (``blobs`` None: read from the file) or of a live one
        (its blobs in ``blobs``); an inline scalar's is built from the value."""
        if not ref:
            return None
        if "v" in ref:
            return PreviewBuilder(ValueOptions()).build(ref["v"])
        if blobs is None:
            return self.timeline.preview_blob(ref["p"]) if ref.get("p") else None
        return previews.from_blobs(blobs, ref.get("p"))


def _identity(preview: Any) -> str | None:
    found = preview.get("identity") if isinstance(preview, dict) else None
    return found if isinstance(found, str) and found else None


def _without_identity(preview: Any) -> Any:
    if isinstance(preview, dict) and "identity" in preview:
        return {k: v for k, v in preview.items() if k != "identity"}
    return preview


def inline_digest(value: Any) -> str:
    """What an inline scalar (``{"v": value}``) is compared by on replay: its type and
    canonical JSON, as ``records.Value.digest`` writes it — a string's with the memory
    addresses in it blanked (``addresses.text_without_addresses``), as its identity digest
    has them."""
    if type(value) is str:
        value = text_without_addresses(value)
    return json.dumps([type(value).__name__, value])


def _live_path(filename: str | None) -> str:
    """A live frame's file as recorded ones are resolved: ``<string>`` (generated code, such
    as a dataclass's ``__init__``) stays as it is."""
    if filename and filename.startswith("<"):
        return filename
    return os.path.abspath(filename or "")


def _machinery(preview: Any) -> bool:
    return isinstance(preview, dict) and preview.get("machinery") is True


def _refs(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict):
            out[str(item[0])] = item[1]
    return out


def _chain(frames: list[dict[str, Any]]) -> str:
    names = [str(f.get("function", "?")) for f in frames]
    return " > ".join(names[-4:]) if names else "empty"


def compare_steps(expected: Step, actual: Step, cwd: str,
                  relocation: Relocation | None = None) -> dict[str, Any] | None:
    """Compare two stored steps (a recorded run's and its replay's, for traced runs that are
    replayed into a scratch timeline); a divergence report or None. Values match by digest,
    else — with trust — by ``==`` of the loaded objects. Recorded files are resolved against
    ``cwd`` and mapped by ``relocation`` (a replay from a copy of the program)."""
    relocation = relocation or Relocation(cwd, cwd)
    index = expected.index
    exp = step_facts(expected.kind, expected.label, expected.function, expected.filename,
                     expected.lineno)
    act = step_facts(actual.kind, actual.label, actual.function, actual.filename,
                     actual.lineno)
    if expected.kind != actual.kind or expected.label != actual.label:
        what = "kind" if expected.kind != actual.kind else "label"
        return divergence(index, what, f"expected {_step_words(expected.kind, expected.label)}, "
                          f"the program reached {_step_words(actual.kind, actual.label)}",
                          expected=exp, actual=act)
    rec_frames, act_frames = expected.frames, actual.frames
    if len(rec_frames) != len(act_frames):
        return divergence(index, "stack", f"expected {len(rec_frames)} frames on the stack, "
                          f"the program has {len(act_frames)}", expected=exp, actual=act)
    variables: list[dict[str, Any]] = []
    for position, (rec, got) in enumerate(zip(rec_frames, act_frames)):
        rec_file = relocation.path(os.path.normpath(os.path.join(cwd, rec.filename)))
        if rec.function != got.function or rec_file != os.path.abspath(got.filename):
            return divergence(index, "stack", f"frame #{position}: expected {rec.function}, "
                              f"the program is in {got.function}", expected=exp, actual=act)
        innermost = position == len(rec_frames) - 1
        rec_line = expected.lineno if innermost else rec.lineno
        got_line = actual.lineno if innermost else got.lineno
        if rec_line != got_line:
            return divergence(index, "line", f"{got.function}: expected line {rec_line}, the "
                              f"program is at line {got_line}", expected=exp, actual=act)
        if got.submitted:
            continue  # another thread's frame, kept without locals (``capture.frames``)
        if not _same_refs(rec._local_refs, got._local_refs):  # (the usual case: equal)
            _stored_values(got.function, rec.locals, got.locals, variables)
    _stored_values("(step values)", expected.extra, actual.extra, variables)
    if variables:
        names = ", ".join(v["name"] for v in variables[:5])
        return divergence(index, "value", f"{len(variables)} value(s) differ: {names}",
                          expected=exp, actual=act, variables=variables)
    return None


def _step_words(kind: str, label: str | None = None) -> str:
    """``a line step``, ``an exception step EOFError``: a step's kind and label in a sentence."""
    article = "an" if kind[:1] in "aeiou" else "a"
    return f"{article} {kind} step" + (f" {label}" if label else "")


def _same_refs(expected: Any, actual: Any) -> bool:
    """True when two frames' stored locals are the same refs (same blobs, same inline values
    of the same types): equal without reading a value. False says nothing."""
    if expected != actual:
        return False
    for (_, exp), (_, got) in zip(expected, actual):
        if "v" in exp and type(exp["v"]) is not type(got.get("v")):
            return False  # 1 == True == 1.0, but they are not the same value
    return True


def _stored_values(frame: str, expected: dict[str, Value], actual: dict[str, Value],
                   out: list[dict[str, Any]]) -> None:
    for name in list(expected) + [n for n in actual if n not in expected]:
        if len(out) >= MAX_VARIABLES:
            return
        exp, got = expected.get(name), actual.get(name)
        if exp is not None and got is not None and _same_stored(exp, got):
            continue
        exp_preview = exp.preview if exp is not None else None
        got_preview = got.preview if got is not None else None
        out.append({"frame": frame, "name": name,
                    "expected": exp.repr if exp is not None else "(absent)",
                    "actual": got.repr if got is not None else "(absent)",
                    "diff": diff_previews(exp_preview, got_preview)})


def _same_stored(expected: Value, actual: Value) -> bool:
    """``same_value`` for two stored values (a recorded step's and its traced replay's)."""
    if expected.digest == actual.digest:
        return True
    if expected.is_inline and actual.is_inline:
        return inline_digest(expected.ref["v"]) == inline_digest(actual.ref["v"])
    known = expected.identity, actual.identity
    if known[0] and known[1]:
        return known[0] == known[1]
    if expected.has_payload and actual.has_payload and expected.timeline.trust:
        try:
            return same_objects(expected.load(trust=True), actual.load(trust=True))
        except Exception:  # noqa: BLE001 - an incomparable value is reported, not raised
            return False
    return normalize(_without_identity(expected.preview)) == normalize(
        _without_identity(actual.preview))
