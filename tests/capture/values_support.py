"""Helpers for the value tests: read back what one recorded checkpoint captured."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any

import snapstate_capture as snap
from snapstate_inspect import cli


def read_locals(path: Path, step: int = -1, frame: int = -1) -> dict[str, Any]:
    """``{name: {"preview", "serializer", "has_payload", "value" or "load_error"}}`` for the
    locals of ``frame`` at ``step`` of the last run (payloads loaded with trust).

    Also checks that ``snapstate show`` of that step displays each local's preview and its
    placeholder reasons (issue 3: "snapstate show on each case's file")."""
    out: dict[str, Any] = {}
    with snap.open_timeline(path, trust=True) as timeline:
        captured = timeline.runs[-1].steps[step]
        for name, value in captured.frames[frame].locals.items():
            out[name] = _entry(value)
        index = captured.index
    assert_shown(path, index, {name: entry["preview"] for name, entry in out.items()})
    return out


def show_text(path: Path, step: int) -> str:
    """What ``snapstate show FILE --step N`` prints (run in this process), whitespace-joined."""
    buffer = io.StringIO()
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "1000"
    try:
        with contextlib.redirect_stdout(buffer):
            code = cli.main(["show", str(path), "--step", str(step)])
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    assert code == 0
    return " ".join(buffer.getvalue().split())


def assert_shown(path: Path, step: int, previews: dict[str, dict[str, Any]]) -> None:
    """``snapstate show`` displays each preview's type, repr and placeholder reasons."""
    text = show_text(path, step)
    for name, preview in previews.items():
        assert preview["type"].removeprefix("builtins.") in text, name
        assert " ".join(preview["repr"].split())[:60] in text, name
        holder = preview.get("placeholder")
        if holder:
            assert f"[placeholder: {holder['reason']}]" in text, name
        for part in preview.get("placeholders", []):
            assert f"[placeholder at {part['path']}: {part['reason']}]" in text, name


def read_extra(path: Path, step: int = -1) -> dict[str, Any]:
    """Same as ``read_locals`` for the step's extra values (checkpoint keyword arguments)."""
    with snap.open_timeline(path, trust=True) as timeline:
        captured = timeline.runs[-1].steps[step]
        out = {name: _entry(value) for name, value in captured.extra.items()}
        index = captured.index
    assert_shown(path, index, {name: entry["preview"] for name, entry in out.items()})
    return out


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
        keys = [row[0].hex() for row in timeline.engine.query("SELECT hash FROM blobs")]
        return [timeline.blob(key) for key in keys]
