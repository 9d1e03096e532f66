"""The replay fast path: does a live step match its recording, checked by payload hashes only?

A recording stores, for each value, a preview and a payload; the value's digest is the payload
hash. On replay, building previews again costs more than the program's own work (bounded
trees, guarded reprs), and is only needed to *report* a difference. So each live value is
pickled (no test-load, no preview) and hashed: when every frame's function, file, line, local
names and payload hashes (and the step's extra values) equal the recording, the step matches.
Anything else — a different hash, a value recorded without payload (placeholder, redacted),
a big list or dict stored as chunks, an encrypted run — answers "not sure", and the full
comparison (``compare.py``), which is authoritative and builds the report, runs instead (it
captures through the recorder's value cache, so unchanged values cost a pickle).
"""

from __future__ import annotations

import os
import types
from typing import Any

from ..capture import chunked
from ..store.hashing import content_hash
from ..options import ValueOptions
from ..capture.step_capture import PreviewOnly
from ..store.reader import Step, Timeline
from ..values.payload import serialize
from .compare import inline_digest
from .relocate import Relocation


class FastMatcher:
    """Checks live steps against recorded ones by payload hash (see module docstring)."""

    def __init__(self, timeline: Timeline, options: ValueOptions, cwd: str,
                 relocation: Relocation | None = None) -> None:
        self.timeline = timeline
        self.options = ValueOptions(**{**options.__dict__, "test_load": False})
        self.cwd = cwd
        self.relocation = relocation or Relocation(cwd, cwd)
        self._paths: dict[str, str] = {}

    def matches(self, recorded: Step, kind: str, label: str | None,
                frames: list[types.FrameType], extra: dict[str, Any] | None,
                lineno: int | None) -> bool:
        """True only when the live step certainly equals ``recorded``."""
        if recorded.kind != kind or recorded.label != label:
            return False
        keys = recorded.frame_keys
        if len(keys) != len(frames):
            return False
        for position, (key, frame) in enumerate(zip(keys, frames)):
            record = self.timeline.json_blob(key)
            code = frame.f_code
            innermost = position == len(frames) - 1
            line = (lineno or frame.f_lineno) if innermost else frame.f_lineno
            if (record.get("function") != getattr(code, "co_qualname", code.co_name)
                    or record.get("lineno") != frame.f_lineno or
                    (innermost and recorded.lineno != line)
                    or self._path(record.get("filename")) != os.path.abspath(code.co_filename)):
                return False
            if not self._same_locals(record.get("locals") or [], frame):
                return False
        refs = recorded._extra_refs
        extra = extra or {}
        if set(refs) != set(extra):
            return False
        for name, value in extra.items():
            if isinstance(value, PreviewOnly):
                continue  # arguments of an effect: checked by the journal's digest
            if not self._same(refs[name], name, value):
                return False
        return True

    def _same_locals(self, refs: list, frame: types.FrameType) -> bool:
        live = frame.f_locals
        module_level = live is frame.f_globals
        names = [n for n in live if not (module_level and n.startswith("__")
                                          and n.endswith("__"))]
        if len(names) != len(refs):
            return False
        for (name, ref), live_name in zip(refs, names):
            if name != live_name or not self._same(ref, name, live[name]):
                return False
        return True

    def _same(self, ref: dict[str, Any], name: str, value: Any) -> bool:
        if "v" in ref:  # an inline scalar (``valuecache._INLINE``): as ``compare`` does
            recorded = ref["v"]
            return type(value) is type(recorded) and \
                inline_digest(value) == inline_digest(recorded)
        payload = ref.get("b")
        if not payload or ref.get("x") or self.options.is_secret(name):
            return False
        cls = type(value)
        if (cls is list or cls is dict) and value:
            if len(value) > chunked.chunk_size(value):
                return False  # stored as chunks (``valuecache.py``): its key is a manifest's
        data = serialize(value, self.options).data
        return data is not None and content_hash(data).hex() == payload

    def _path(self, filename: str | None) -> str | None:
        if not filename or filename.startswith("<"):
            return filename
        known = self._paths.get(filename)
        if known is None:
            known = self._paths[filename] = self.relocation.path(
                os.path.normpath(os.path.join(self.cwd, filename)))
        return known
