"""The read-only records a timeline hands out: ``Step``, ``Frame``, ``Value``, ``StepSummary``.

Made by the reader (``store.reader``) from ``steps`` rows and by the chunk reader
(``store.chunk_reader``) from trace chunks. Nothing here unpickles anything: ``Value.load``
asks the timeline's payload gate (``PayloadGate``; the trust gate of ``trust.gate`` for a
timeline opened with ``snapstate_capture.open_timeline``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import IntegrityError, SnapStateError, UntrustedPayloadError
from . import sanitize, task_column

if TYPE_CHECKING:
    from .reader import Run, Timeline


class PayloadGate(Protocol):
    """What decides whether a payload may be unpickled, and opens sealed values.

    ``load(value, trust=...)`` returns the object (raises ``UntrustedPayloadError``,
    ``PayloadLoadError``, ``IntegrityError``); ``unseal(value)`` returns the preview of an
    encrypted value, decrypted or a locked stand-in. ``trust.gate.TrustGate`` is the one gate.
    """

    def load(self, value: Value, *, trust: bool) -> Any: ...

    def unseal(self, value: Value) -> dict[str, Any]: ...


@dataclass(frozen=True)
class StepSummary:
    """A step's list columns only (see ``Steps.summaries``): cheap to read by the thousand."""

    index: int
    kind: str
    label: str | None
    wall_time: float
    function: str | None
    filename: str | None
    lineno: int | None
    depth: int
    n_changed: int
    thread: str
    task: str | None
    #: The lineage that made the step (``store/task_column.py``), None in older files.
    lineage: str | None = None


class Step:
    """One step of a run. Frames are loaded on first access."""

    def __init__(self, run: Run, row: tuple) -> None:
        (self.index, self.kind, self.label, self.wall_time, self.mono_time, self.thread,
         self.task, self.function, self.filename, self.lineno, self.depth, frames, extra,
         errors, self.n_changed, self.hash) = sanitize.step_row(run.timeline.path, row)
        #: ``task`` is the asyncio task's name; ``lineage`` who made the step, for replay.
        self.task, self.lineage = task_column.split(self.task)
        self.run = run
        self.frame_keys: list[str] = frames
        self._extra_refs: dict[str, Any] = extra
        self.errors: list[str] = errors
        #: Pending asyncio tasks at this step (traced steps only; see ``async_tasks``).
        self.tasks: list[list[Any]] | None = None

    def __repr__(self) -> str:
        return f"<Step {self.index} {self.kind} {self.function} {self.label!r}>"

    @cached_property
    def frames(self) -> tuple[Frame, ...]:
        """The saved stack, outermost frame first."""
        timeline = self.run.timeline
        return tuple(Frame(timeline, key, timeline.json_blob(key), step=self)
                     for key in self.frame_keys)

    @cached_property
    def extra(self) -> dict[str, Value]:
        """Values stored with the step itself: checkpoint extras, ``return``, ``exception``."""
        return {name: Value(self.run.timeline, name, ref, step=self)
                for name, ref in self._extra_refs.items()}


class Frame:
    """One frame of a saved stack (read from a content-addressed frame record)."""

    def __init__(self, timeline: Timeline, key: str, record: dict[str, Any], *,
                 step: Step | None = None) -> None:
        if not isinstance(record, dict):
            raise IntegrityError(timeline.path, f"frame record {key[:12]} is malformed")
        self.timeline = timeline
        self.step = step
        self.key = key
        (self.function, self.filename, self.lineno, self.code_hash, self.source_hash,
         self._local_refs) = sanitize.frame_record(record)
        #: A frame of the code that submitted the thread-pool call this step was made in, as
        #: it was at the submit: another thread's, stored without locals (``capture.frames``).
        self.submitted = record.get("submitted") is True

    def __repr__(self) -> str:
        return f"<Frame {self.function} {self.filename}:{self.lineno}>"

    @property
    def local_refs(self) -> list[list[Any]]:
        """The locals as stored, ``[[name, ref dict], ...]`` in Python's order, before any
        ``Value`` is built: equal lists mean equal locals (refs name content by hash), so a
        comparison of many frames decides most of them here. Do not modify."""
        return self._local_refs

    @cached_property
    def locals(self) -> dict[str, Value]:
        """Local variables, name -> ``Value``, in the order Python listed them."""
        out: dict[str, Value] = {}
        for item in self._local_refs:
            if isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict):
                out[str(item[0])] = Value(self.timeline, str(item[0]), item[1], step=self.step)
        return out

    @cached_property
    def source(self) -> tuple[str, ...]:
        """The frame's file as saved in the timeline, one string per line (no line ends);
        empty when the source was not available at capture time."""
        if not self.source_hash:
            return ()
        return tuple(self.timeline.blob(self.source_hash, limit=sanitize.MAX_RECORD)
                     .decode("utf-8", "replace")
                     .splitlines())


class Value:
    """One captured value: a preview (always), maybe a payload.

    ``preview`` is the JSON dict described in ``snapstate_capture.values.preview``; reading it
    runs no code from the file. ``load()`` unpickles the payload and so needs trust.
    """

    def __init__(self, timeline: Timeline, name: str, ref: dict[str, Any], *,
                 step: Step | None = None) -> None:
        self.timeline = timeline
        self.step = step  # where it was read from: the trust gate checks that step's run
        self.name = name
        self.ref = ref = sanitize.value_ref(ref)
        self.preview_key: str | None = ref.get("p")
        self.payload_key: str | None = ref.get("b")
        self.serializer: str | None = ref.get("s")
        #: Inline values: scalars (int, float, bool, None, short str) stored in a traced step
        #: itself rather than as blobs (``store.chunks``); ``ref == {"v": value}``.
        self.is_inline = "v" in ref

    def __repr__(self) -> str:
        return f"<Value {self.name}: {self.type_name} {self.repr[:40]!r}>"

    @cached_property
    def preview(self) -> dict[str, Any]:
        """The preview dict (``{"type", "repr", ...}``); a minimal stand-in if it is missing."""
        if self.is_inline:
            from ..values.preview import PreviewBuilder

            return PreviewBuilder(_inline_options()).build(self.ref["v"])
        if not self.preview_key:
            return {"type": "?", "repr": "<no preview>"}
        if self.ref.get("x"):
            return sanitize.preview(self._unsealed())
        data = self.timeline.preview_blob(self.preview_key)
        if not isinstance(data, dict):
            raise IntegrityError(self.timeline.path, f"preview of {self.name} is malformed")
        return sanitize.preview(data)

    @cached_property
    def digest(self) -> str:
        """Identity of the captured content: payload hash, else preview hash (for an inline
        value, ``"v:"`` and its canonical JSON; computed once: diffs ask several times)."""
        if self.is_inline:
            return "v:" + json.dumps([type(self.ref["v"]).__name__, self.ref["v"]])
        return self.payload_key or self.preview_key or ""

    @property
    def identity(self) -> str | None:
        """The value's identity digest (``values.identity``: the same value whatever the
        process, set order or memory addresses), stored in its preview at capture; None for
        inline scalars, values captured without one (too big, secret parts, older files)."""
        if self.is_inline or not self.preview_key:
            return None
        top: Any = None
        if not self.ref.get("x"):  # the top node alone: children stored apart are not read
            try:
                top = self.timeline.json_blob(self.preview_key)
            except SnapStateError:
                top = None
        if not isinstance(top, dict):
            top = self.preview
        found = top.get("identity")
        return found if isinstance(found, str) and len(found) == 32 else None

    @property
    def type_name(self) -> str:
        return str(self.preview.get("type", "?"))

    @property
    def repr(self) -> str:
        return str(self.preview.get("repr", ""))

    @property
    def is_placeholder(self) -> bool:
        return "placeholder" in self.preview

    @property
    def is_sealed(self) -> bool:
        """Encrypted, and the user's key cannot open it: shown as locked
        (see ``snapstate_capture.trust.encryption``)."""
        return "sealed" in self.preview

    @property
    def is_redacted(self) -> bool:
        return bool(self.preview.get("redacted"))

    @property
    def has_payload(self) -> bool:
        return bool(self.payload_key) or self.is_inline

    def load(self, trust: bool = False) -> Any:
        """Unpickle the payload and return the object.

        Allowed when the value's run verifies under the user's key (``snapstate_capture.trust.gate``),
        or with ``trust=True`` here or when the timeline was opened; else raises
        ``UntrustedPayloadError``. ``PayloadLoadError`` when there is no payload or it cannot be
        loaded; ``IntegrityError`` when the stored bytes do not match their hash.
        """
        gate = self.timeline.gate
        if gate is None:
            raise UntrustedPayloadError(
                f"{self.timeline.path}: refusing to load {self.name!r}: the timeline was opened "
                "without the trust gate (open it with snapstate_capture.open_timeline)")
        return gate.load(self, trust=trust or self.timeline.trust)

    def _unsealed(self) -> dict[str, Any]:
        """The preview of an encrypted value: the gate opens it, or it stays locked."""
        gate = self.timeline.gate
        if gate is None:
            key_id = str(self.ref.get("x"))[:16]
            return {"type": "?", "repr": f"<locked: encrypted with key {key_id}>",
                    "sealed": {"key_id": key_id, "reason": "no trust gate"}}
        return gate.unseal(self)


_INLINE_OPTIONS: Any = None


def _inline_options() -> Any:
    """The default ``ValueOptions`` (frozen), made once: inline previews are built per read."""
    global _INLINE_OPTIONS
    if _INLINE_OPTIONS is None:
        from ..options import ValueOptions

        _INLINE_OPTIONS = ValueOptions()
    return _INLINE_OPTIONS
