"""Steps: the stack and values at a capture point, made into a ``StepRecord`` and written.

``StepCapturing`` is the part of ``Recorder`` (``recorder.py``) that every capture point calls
— ``checkpoint()``, ``@step``, effects, the exception leaving a ``record`` block: ``capture``
takes one step (never raising into the program: a failure is counted and said once) and
``build_record`` captures the stack ending at a frame and the step's extra values
(``frames.FrameCapturer``), with the number of locals changed since the frame's previous step.
``effect_row`` completes an effect's journal row with the refs captured on its step; ``lane``
names the lineage the calling code's steps and effects are ordered in. It uses
the recorder's ``options``, ``root``, ``run_id``, ``capture_errors``, ``_writer``, ``_frames``,
``_tracer``, ``_stream``, ``_fault``, ``_reentry``, ``_last_digests``, ``_last_raise_point``,
``_cut_short`` and ``_warn``.
"""

from __future__ import annotations

import types
from typing import Any

from . import lineage, loop_passes
from .frames import StackCapture
from .tasks import current_task_name, current_thread_name
from ..clocks import Clocks
from ..program_signals import signal_of
from ..errors import WriteFailed
from ..store import task_column
from ..store.step_record import StepRecord
from ..values import capture_value
from ..values.payload import caught_warnings


class PreviewOnly:
    """Wraps a step's extra value that is stored as a preview only, never as a payload (an
    effect's arguments: they are compared by digest on replay, not loaded)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class StepCapturing:
    """Taking steps, for ``Recorder`` (module docstring)."""

    def capture(self, kind: str, frame: types.FrameType | None, *, label: str | None = None,
                extra: dict[str, Any] | None = None, lineno: int | None = None,
                effect: dict[str, Any] | None = None) -> int | None:
        """Append one step of ``kind`` with the stack ending at ``frame``; return its index.

        ``extra`` values are captured with the step (checkpoint extras, return values). Never
        raises; returns None when nothing could be written. Re-entrant calls (capture code
        triggering capture) are ignored. ``effect`` is an effect-journal row (see
        ``effects.py``) written in the same transaction as the step.
        """
        if self._writer is None or self._fault is not None or getattr(self._reentry, "busy",
                                                                      False):
            return None
        self._last_raise_point = None
        self._reentry.busy = True
        tracer = self._tracer
        saved = None
        if tracer is not None:
            tracer.check_installed()
            saved = tracer.pause()  # user code run by capture (a __reduce__) is not a step
        try:
            return self._capture(kind, frame, label, extra, lineno, effect)
        except Exception as exc:  # noqa: BLE001 - a capture failure is recorded, never thrown
            if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                self._frames.forget()  # the program's signal handler raised it here
                raise
            # The step was begun and not written: what its capture cached names blobs the
            # file does not have (a later step reusing them would point at nothing).
            self._frames.forget()
            self.capture_errors += 1
            article = "an" if kind[:1] in ("a", "e", "i", "o", "u") else "a"
            self._warn(f"capture failed at {article} {kind} step: {type(exc).__name__}: {exc}")
            return None
        except BaseException:  # Ctrl-C while capturing: the program goes on, or not
            self._frames.forget()
            raise
        finally:
            if tracer is not None:
                tracer.resume(saved)
            self._reentry.busy = False

    def _capture(self, kind: str, frame: types.FrameType | None, label: str | None,
                 extra: dict[str, Any] | None, lineno: int | None,
                 effect: dict[str, Any] | None = None) -> int | None:
        record = self.build_record(kind, frame, label, extra, lineno)
        writer = self._writer
        if writer is None or self.run_id is None:
            return None
        if effect is not None:
            effect = self.effect_row(effect, record)
        try:
            if self._stream is not None and kind != "checkpoint":
                # only checkpoint() hands its index to the program: a held run stays held
                index = writer.append_step(self.run_id, record, effect=effect, numbered=False)
            else:
                index = writer.append_step(self.run_id, record, effect=effect)
        except WriteFailed as failure:
            self._frames.forget()  # cached refs may name blobs that were rolled back
            self._cut_short(failure)
            return None
        offers, self._reentry.offers = getattr(self._reentry, "offers", None), None
        if offers and self._tracer is not None:  # the step's blobs are with the writer now
            self._tracer.encoder.take_offers(offers)
        return index

    def effect_row(self, effect: dict[str, Any], record: StepRecord) -> dict[str, Any]:
        """Complete an effect-journal row with the value refs captured on its step: the
        result (or exception) ref, plus the arguments' preview under ``"a"`` (``"ax"``: the key
        it is sealed with, in an encrypted run, whose argument digest is keyed too)."""
        row = dict(effect)  # "value" gets: the result ref, "a" args preview, "r" rng state
        ref = dict(record.extra.get("result") or record.extra.get("exception") or {})
        args_ref = record.extra.get("args")
        if args_ref:
            ref["a"] = args_ref.get("p")
            if args_ref.get("x"):
                ref["ax"] = args_ref["x"]
        sealer = self._frames.sealer
        if sealer is not None and row.get("args_hash"):
            row["args_hash"] = sealer.digest(row["args_hash"])
        chunks_ref = record.extra.get("chunks")
        if chunks_ref:
            ref["k"] = chunks_ref  # a stream's chunks before its error (``EffectCall.chunks``)
        by = row.pop("by", None)
        if by:
            ref["w"] = by  # who gave a wait's outcome, and when
        if row.pop("suspended", None) is False:
            ref["u"] = 1  # returned without suspending its task
        ref.update(loop_passes.journal_ref(row.pop("passes", None)))  # loop passes between
        cancelled_after = row.pop("cancelled_after", None)
        if cancelled_after is not None:
            ref["c"] = cancelled_after  # seconds to its cancellation (cancelled_effects.py)
        rng_after = row.pop("rng", None)
        if rng_after:
            key, data = rng_after
            record.blobs[key] = data
            ref["r"] = key
        row["value"] = ref
        return row

    def build_record(self, kind: str, frame: types.FrameType | None, label: str | None,
                     extra: dict[str, Any] | None, lineno: int | None,
                     frames: list[types.FrameType] | None = None) -> StepRecord:
        """Capture the stack ending at ``frame`` (and ``extra``) into a ``StepRecord``."""
        wall, mono = Clocks.time(), Clocks.monotonic()  # not the program's (``clocks.py``)
        if frames is None:
            frames = self._frames.walk(frame, self.root)
            if self._tracer is not None:
                # ``exec``'d code without a file — the ``<string>`` frames pytest-xdist's
                # workers run tests under — is never traced, so a replay's stacks lack it
                frames = [f for f in frames if f.f_code.co_filename != "<string>"]
        with caught_warnings() as said:  # warnings from pickling: capture errors, not output
            stack: StackCapture = self._frames.capture(frames, innermost_lineno=lineno)
            extra_refs = {}
            for name, value in (extra or {}).items():
                if isinstance(value, PreviewOnly):
                    captured = capture_value(value.value, name=name,
                                             options=self.options.values, payloads=False)
                    extra_refs[name] = self._frames.preview_ref(captured.preview, stack)
                else:
                    extra_refs[name] = self._frames.value_ref(value, name, stack)
        self._frames.end_record(stack)
        self._reentry.offers = stack.offers  # handed to the tracer once the step is written
        stack.errors.extend(f"warning while capturing: {text}" for text in said)
        thread = current_thread_name()
        n_changed = self._count_changes(thread, frames, stack.innermost_digests)
        record = StepRecord(
            kind=kind, label=label, wall=wall, mono=mono, thread=thread,
            task=task_column.join(current_task_name(), self.lane()),
            function=stack.function, filename=stack.filename,
            lineno=stack.lineno, depth=len(stack.frames), frames=stack.frames,
            extra=extra_refs, errors=stack.errors, n_changed=n_changed,
            blobs={k: v for k, v in stack.blobs.items()
                   if self._writer is None or not self._writer.has_blob(k)},
            manifests=stack.manifests, bases=stack.bases)
        if stack.errors:
            self.capture_errors += len(stack.errors)
        return record

    def _count_changes(self, thread: str, frames: list[types.FrameType],
                       digests: dict[str, str]) -> int:
        """Number of locals added, removed or changed since the innermost frame's previous step.

        Remembers digests only for frames still on this thread's stack, so memory stays bounded.
        """
        if not frames:
            return 0
        known = self._last_digests.setdefault(thread, {})
        key = id(frames[-1])
        previous = known.get(key)
        live = {id(f) for f in frames}
        for stale in [k for k in known if k not in live]:
            del known[stale]
        known[key] = digests
        if previous is None:
            return len(digests)
        changed = sum(1 for name, d in digests.items() if previous.get(name) != d)
        return changed + sum(1 for name in previous if name not in digests)

    def lane(self) -> str:
        """The lineage steps and effects of the calling code are ordered in
        (``lineage.current()``: its task, pool call or thread, by who spawned it)."""
        return lineage.current()

    def capture_exception(self, exc: BaseException) -> None:
        """Append an ``exception`` step holding the stack and locals at the raise point."""
        tb = exc.__traceback__
        if tb is None:
            return
        while tb.tb_next is not None:
            tb = tb.tb_next
        raise_point = (type(exc), tb.tb_frame.f_code, tb.tb_lineno)
        if raise_point == self._last_raise_point:
            return  # already the last step: the same exception, propagating further
        self.capture("exception", tb.tb_frame, label=f"{type(exc).__name__}",
                     extra={"exception": exc}, lineno=tb.tb_lineno)
        self._last_raise_point = raise_point
