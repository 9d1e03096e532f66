"""Captured values: a bounded preview always, a payload when serializable, else a placeholder.

``capture_value(obj, name=..., options=...)`` is the one entry point the recorder uses; it never
raises. See DESIGN.md "Vocabulary: value".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..options import ValueOptions
from .payload import Serialized, loads, serialize
from .placeholder import Placeholder
from .preview import PreviewBuilder, redacted_preview, safe_repr, type_name

__all__ = ["CapturedValue", "Placeholder", "capture_value", "loads", "safe_repr", "type_name"]


@dataclass(frozen=True)
class CapturedValue:
    """One value as captured: ``preview`` (JSON-able dict, see ``preview.py``), ``payload``
    (bytes or None), ``serializer`` (``"pickle"``/``"dill"``/None) and ``error`` (capture
    problem text or None)."""

    preview: dict[str, Any]
    payload: bytes | None
    serializer: str | None
    error: str | None = None


def capture_value(obj: Any, *, name: str | None = None, options: ValueOptions,
                  payloads: bool = True) -> CapturedValue:
    """Capture ``obj`` (found under ``name``) as preview + payload; never raises.

    Secret names (``options.is_secret``) give a redacted preview and no payload. A value that
    cannot be serialized gets ``preview["placeholder"] = {"reason", "path"}`` and no payload.
    """
    try:
        if name is not None and options.is_secret(name):
            return CapturedValue(redacted_preview(obj), None, None)
        preview = PreviewBuilder(options).build(obj)
        if not payloads:
            return CapturedValue(preview, None, None)
        result: Serialized = serialize(obj, options)
        if result.data is None:
            preview["placeholder"] = {"reason": result.error or "not serializable", "path": ""}
        elif result.loadable is False:
            preview["not_loadable"] = result.error
        return CapturedValue(preview, result.data, result.serializer, result.error)
    except BaseException as exc:  # noqa: BLE001 - capture must never raise into user code
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        reason = f"capture failed: {type(exc).__name__}"
        preview = {"type": "?", "repr": "<capture failed>",
                   "placeholder": {"reason": reason, "path": ""}}
        return CapturedValue(preview, None, None, reason)
