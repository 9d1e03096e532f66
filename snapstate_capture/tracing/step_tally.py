"""Step numbers of a held traced run, counted in the recorder's process.

A held stream (``Stream(begin=...)``, what ``pytest --snapstate`` records each test into) has no
writer process yet, but ``checkpoint()`` returns its step's index. ``StepTally`` runs the trace
writer's own ``ChunkBuilder.feed`` over the held messages — so steps are counted exactly as they
will be stored — with everything that stores data left out: no chunk is encoded, no marshal copy
of a value is captured, nothing is written. It only counts.
"""

from __future__ import annotations

import marshal
from typing import Any

from .trace_writer import ChunkBuilder


class _Count:
    """Stands in for the ``TimelineWriter`` a ``ChunkBuilder`` writes through: counts steps."""

    def __init__(self) -> None:
        self.steps = 0

    def next_index(self, run_id: str) -> int:
        return self.steps


class StepTally(ChunkBuilder):
    """``index(messages)``: the number of steps the held messages so far make (the index the
    next step gets). Messages are fed once each; call it with the whole held list each time."""

    def __init__(self, run_id: str) -> None:
        super().__init__(_Count(), run_id)  # type: ignore[arg-type]
        self.fed = 0  # messages of the held list already counted

    def index(self, messages: list[bytes]) -> int:
        for data in messages[self.fed:]:
            message = marshal.loads(data)
            if isinstance(message, list):
                self.feed(message)
        self.fed = len(messages)
        self.write_chunk()
        return self.writer.steps

    def _value(self, item: Any) -> None:
        pass  # a marshal copy of a value is not a step

    def _blob_kind(self, item: Any) -> None:
        pass  # nothing is stored: a chunked value's manifest flags are not kept

    @staticmethod
    def _has_marks(item: Any) -> bool:
        return False  # no value is resolved (``_value`` keeps none): a step counts as itself

    def write_chunk(self) -> None:
        if not self.count:
            return
        self.writer.steps += self.count
        state = self.state
        if state.closed is not None:
            state.frames.pop(state.closed.fid, None)
            state.closed = None
        self.items, self.count, self.blobs = [], 0, {}

    def _write_full(self, fields: dict[str, Any]) -> None:
        self.writer.steps += 1
        self.blobs = {}
