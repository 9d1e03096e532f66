"""One step as the recorder hands it to the writer, and the row and chain fields it becomes.

``StepRecord`` is what every producer of steps builds — the recorder (``capture/recorder.py``),
the trace writer process, the spool writer, ``export`` and ``gc`` — and ``TimelineWriter``
(``writer.py``) stores: ``_step_row`` lays it out as a ``steps`` row, ``chain_fields`` and
``chunk_chain_fields`` (``store.sealing``) are the dicts the run's hash chain covers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from . import sealing

#: ``json.dumps`` with its defaults, as SnapState's own encoder: a program may patch
#: ``json.dumps`` while it is recorded, and the steps written in its process must not call it.
_json_text = json.JSONEncoder().encode


@dataclass
class StepRecord:
    """One step as the recorder hands it to the writer.

    ``frames`` holds frame-record hashes (hex), outermost first; ``extra`` maps names to value
    refs (see ``frames.value_ref``); ``errors`` lists capture-error texts; ``blobs`` maps hex
    hashes to raw bytes that must be in the file before the step is (written in the same
    transaction, skipped when already present). ``manifests`` names the keys in ``blobs`` that are
    manifests (see ``blobs.py``); ``bases`` maps a key to the key of a previous version of the same
    thing, which the writer may store it as a delta against (docs/storage.md).
    """

    kind: str
    label: str | None
    wall: float
    mono: float
    thread: str
    task: str | None
    function: str | None
    filename: str | None
    lineno: int | None
    depth: int
    frames: list[str]
    extra: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    n_changed: int = 0
    blobs: dict[str, bytes] = field(default_factory=dict)
    manifests: set[str] = field(default_factory=set)
    bases: dict[str, str] = field(default_factory=dict)

    def chain_fields(self, version: int = sealing.VERSION) -> dict[str, Any]:
        """The fields covered by the step hash chain: every column of the step's row."""
        return sealing.step_fields(
            self.kind, self.label, self.wall, self.mono, self.thread, self.task, self.frames,
            self.extra, self.errors, function=self.function, filename=self.filename,
            lineno=self.lineno, depth=self.depth, n_changed=self.n_changed, version=version)


#: The dicts hashed into the chain for a ``steps`` row and a trace chunk (``store.sealing``).
chain_fields = sealing.step_fields
chunk_chain_fields = sealing.chunk_fields


def _step_row(run_id: str, index: int, record: StepRecord, digest: bytes) -> tuple:
    return (run_id, index, record.kind, record.label, record.wall, record.mono, record.thread,
            record.task, record.function, record.filename, record.lineno, record.depth,
            _json_text(record.frames), _json_text(record.extra) if record.extra else None,
            _json_text(record.errors) if record.errors else None, record.n_changed, digest)
