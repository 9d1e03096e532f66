"""The recorder's writer while a run is traced: steps and the run's end go through the trace
stream to the trace writer process (``tracing/trace_writer.py``), so checkpoints and traced
steps share one ordered index sequence; a write that failed there comes back as
``errors.WriteFailed`` with the step and the reason."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from ..errors import WriteFailed
from ..store.step_record import StepRecord

_FIELDS = tuple(field.name for field in dataclasses.fields(StepRecord))


class StreamWriter:
    """Stands in for ``TimelineWriter`` while a run is traced: steps and the run's end go through
    the trace stream, so checkpoints and traced steps share one ordered index sequence."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder
        self.stream = recorder._stream

    def has_blob(self, key: str) -> bool:
        tracer = self.recorder._tracer
        return tracer is not None and key in tracer.encoder.sent

    def append_step(self, run_id: str, record: StepRecord,
                    effect: dict[str, Any] | None = None, numbered: bool = True) -> int | None:
        """Queue ``record`` as the run's next step and return its index — asked of the writer
        process, which releases a held stream; with ``numbered=False`` a held stream stays
        held (None is returned; an unheld one still asks, so the step is stored before this
        returns)."""
        from ..store.trace_items import FULL

        # a shallow copy: the record is built for this step alone and its refs are never
        # changed once made (``dataclasses.asdict`` deep-copied every nested ref: ~0.1 ms)
        fields = {name: getattr(record, name) for name in _FIELDS}
        if effect is not None:
            fields["effect"] = effect
        tracer = self.recorder._tracer
        if tracer is not None:
            tracer.encoder.sent.update(record.blobs)
        with self.recorder._full_lock:
            self.stream.items.append((FULL, fields))
            if not numbered and self.stream.held:
                return None
            index = self.stream.request_index()
        if index is None:
            self._raise_cut()
            raise OSError("trace writer is gone")
        return index - 1

    def _raise_cut(self) -> None:
        """Raise ``WriteFailed`` when the writer process stopped storing steps (and why)."""
        if self.stream.cut is not None:
            at, reason = self.stream.cut
            failure = WriteFailed(self.recorder.path, reason)
            failure.at_step = at  # type: ignore[attr-defined]
            raise failure

    def next_index(self, run_id: str) -> int | None:
        return None  # only the trace writer process knows

    def end_run(self, run_id: str, status: str, error: dict[str, Any] | None = None) -> None:
        self.stream.close(status, error)
        self._raise_cut()  # cut short since the last step: the writer marked it truncated

    def close(self) -> None:
        self.stream.close("running", None) if not self.stream.broken else None


_real_os_exit = os._exit


def hold_os_exit(stream: Any) -> None:
    """While a run is traced, ``os._exit`` first hands buffered steps to the writer process and
    waits (bounded) until it stored them, so a program ending that way keeps every completed
    step and the file shows them as soon as the process is gone."""
    def _exit(status: int) -> None:
        try:
            stream.hand_over()
        except Exception:  # noqa: BLE001 - exiting matters more
            pass
        _real_os_exit(status)

    _exit.__doc__ = _real_os_exit.__doc__
    os._exit = _exit


def release_os_exit() -> None:
    os._exit = _real_os_exit
