"""Helpers for the value tests: read back what one recorded checkpoint captured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import snapstate_capture as snap


def read_locals(path: Path, step: int = -1, frame: int = -1) -> dict[str, Any]:
    """``{name: {"preview", "serializer", "has_payload", "value" or "load_error"}}`` for the
    locals of ``frame`` at ``step`` of the last run (payloads loaded with trust)."""
    out: dict[str, Any] = {}
    with snap.open_timeline(path, trust=True) as timeline:
        captured = timeline.runs[-1].steps[step]
        for name, value in captured.frames[frame].locals.items():
            out[name] = _entry(value)
    return out


def read_extra(path: Path, step: int = -1) -> dict[str, Any]:
    """Same as ``read_locals`` for the step's extra values (checkpoint keyword arguments)."""
    with snap.open_timeline(path, trust=True) as timeline:
        return {name: _entry(value)
                for name, value in timeline.runs[-1].steps[step].extra.items()}


def step_errors(path: Path, step: int = -1) -> list[str]:
    """The capture errors recorded on ``step`` of the last run."""
    with snap.open_timeline(path) as timeline:
        return list(timeline.runs[-1].steps[step].errors)


def _entry(value: snap.Value) -> dict[str, Any]:
    entry: dict[str, Any] = {"preview": value.preview, "serializer": value.serializer,
                             "has_payload": value.has_payload}
    if value.has_payload:
        try:
            entry["value"] = value.load()
        except snap.PayloadLoadError as exc:
            entry["load_error"] = str(exc)
    return entry


def child(preview: dict[str, Any], label: str) -> dict[str, Any]:
    """The child preview under ``label`` (``.attr``, ``['key']``, ``[0]``)."""
    for name, node in preview.get("children", []):
        if name == label:
            return node
    raise KeyError(f"{label} not in {[n for n, _ in preview.get('children', [])]}")


def all_blob_bytes(path: Path) -> list[bytes]:
    """Every blob in the file, decoded (hash-checked) — to prove what is NOT stored."""
    with snap.open_timeline(path) as timeline:
        keys = [row[0].hex() for row in timeline.query("SELECT hash FROM blobs")]
        return [timeline.blob(key) for key in keys]
