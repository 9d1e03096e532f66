"""Captured values: a bounded preview always, a payload when serializable, else a placeholder.

``capture_value(obj, name=..., options=...)`` is the one entry point the recorder uses; it never
raises. See DESIGN.md "Vocabulary: value", ``preview.py`` (the preview format), ``payload.py``
(fast path and part-by-part path) and ``reprs.py`` (guarded, timed repr).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..options import ValueOptions
from . import known_types  # noqa: F401 - registers the previews of exceptions, numpy, pandas…
from .payload import Serialized, loads, serialize
from .placeholder import Placeholder
from .preview import MACHINERY, PreviewBuilder, redacted_preview, safe_repr, type_name
from .scrub import scrub, scrub_text, secret_texts

__all__ = ["CapturedValue", "Placeholder", "capture_value", "loads", "safe_repr", "type_name"]


@dataclass(frozen=True)
class CapturedValue:
    """One value as captured.

    ``preview``: JSON-able dict (``preview.py``); ``payload``: bytes or None; ``serializer``:
    ``"pickle"``/``"dill"``/None; ``error``: capture problem text for the step's capture errors
    (no payload, parts replaced by placeholders, not loadable) or None; ``placeholders``: JSON
    forms of the parts replaced in the payload; ``redacted``: paths redacted in the payload.
    """

    preview: dict[str, Any]
    payload: bytes | None
    serializer: str | None
    error: str | None = None
    placeholders: tuple[dict[str, str], ...] = field(default_factory=tuple)
    redacted: tuple[str, ...] = field(default_factory=tuple)


def capture_value(obj: Any, *, name: str | None = None, options: ValueOptions,
                  payloads: bool = True, reuse: dict[int, list] | None = None,
                  plain_payload: bytes | None = None) -> CapturedValue:
    """Capture ``obj`` (found under ``name``) as preview + payload; never raises.

    Secret names (``options.is_secret``) give a redacted preview and no payload. A value that
    cannot be serialized gets ``preview["placeholder"] = {"reason", "path", "type", "repr"}``
    and no payload; parts that cannot be serialized are listed in ``preview["placeholders"]``
    and come back as ``Placeholder`` objects when the payload is loaded. ``reuse``: the
    children memo of this value's previous capture (``PreviewBuilder.reuse``), updated.
    ``plain_payload``: the payload bytes when the caller has checked them with
    ``payload.is_plain_payload`` (then the value is not serialized again).
    """
    try:
        if name is not None and options.is_secret(name):
            return CapturedValue(redacted_preview(obj), None, None)
        builder = PreviewBuilder(options, reuse=reuse)
        preview = builder.build(obj)
        if preview.get("machinery") is True and MACHINERY.lookup(type(obj)) is not None:
            return CapturedValue(preview, None, None)  # framework machinery: preview alone
        if not payloads:
            texts = secret_texts(builder.secret_values)
            return CapturedValue(scrub(preview, texts) if texts else preview, None, None)
        result: Serialized = (serialize(obj, options, path=name or "") if plain_payload is None
                              else Serialized(plain_payload, "pickle", None, True))
        captured = _combine(preview, result, name or "")
        texts = sorted(set(secret_texts(builder.secret_values)) | set(result.secret_texts),
                       key=len, reverse=True)
        if texts:
            captured = dataclasses.replace(captured, preview=scrub(captured.preview, texts),
                                           error=captured.error and scrub_text(captured.error,
                                                                               texts))
        return captured
    except BaseException as exc:  # noqa: BLE001 - capture must never raise into user code
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        reason = f"capture failed: {type(exc).__name__}"
        preview = {"type": "?", "repr": "<capture failed>",
                   "placeholder": {"reason": reason, "path": name or ""}}
        return CapturedValue(preview, None, None, reason)


def _combine(preview: dict[str, Any], result: Serialized, path: str) -> CapturedValue:
    error = None
    if result.data is None:
        reason = result.error or "not serializable"
        preview["placeholder"] = {"reason": reason, "path": path, "type": preview["type"],
                                  "repr": preview.get("repr", "")}
        error = reason
    elif result.placeholders:
        preview["placeholders"] = list(result.placeholders)
        parts = "; ".join(f"{p['path'] or '(value)'}: {p['reason']}"
                          for p in result.placeholders[:5])
        more = len(result.placeholders) - 5
        error = (f"{len(result.placeholders)} part(s) kept as placeholders: {parts}"
                 + (f"; … {more} more" if more > 0 else ""))
    if result.redacted:
        preview["redacted_parts"] = list(result.redacted)
    if result.data is not None and result.loadable is False:
        preview["not_loadable"] = result.error
        error = f"{error}; {result.error}" if error else result.error
    return CapturedValue(preview, result.data, result.serializer, error, result.placeholders,
                         result.redacted)
