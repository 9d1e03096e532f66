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
from ..program_signals import signal_of
from . import clients  # noqa: F401 - registers HTTP and model-API clients as machinery
from . import event_loops  # noqa: F401 - registers asyncio event loops as machinery
from . import executors  # noqa: F401 - registers concurrent.futures pools as machinery
from . import known_types  # noqa: F401 - registers the previews of exceptions, numpy, pandas…
from . import hash_tries  # noqa: F401 - registers the previews of rpds maps and sets
from .identity_at_capture import capture_identity
from .payload import Serialized, caught_warnings, loads, serialize
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
                  plain_payload: bytes | None = None, identify: bool = True,
                  identity_memo: list[Any] | None = None) -> CapturedValue:
    """Capture ``obj`` (found under ``name``) as preview + payload; never raises.

    Secret names (``options.redacts``) give a redacted preview and no payload; credentials
    recognised by their shape are cut out of the preview and the payload (``secret_shapes``). A value that
    cannot be serialized gets ``preview["placeholder"] = {"reason", "path", "type", "repr"}``
    and no payload; parts that cannot be serialized are listed in ``preview["placeholders"]``
    and come back as ``Placeholder`` objects when the payload is loaded. ``reuse``: the
    children memo of this value's previous capture (``PreviewBuilder.reuse``), updated.
    ``plain_payload``: the payload bytes when the caller has checked them with
    ``payload.is_plain_payload`` (then the value is not serialized again). ``identify``:
    store the identity digest in the preview (False for bounded traced values, which are
    compared by their preview — unless it shows an int that may be an object's address:
    ``addresses.py``). ``identity_memo``: this slot's memo for
    ``identity_at_capture.capture_identity`` (kept by the caller, updated).
    """
    if name is not None and options.is_secret(name):
        return _guarded(obj, name, options, payloads, reuse, plain_payload, identify,
                        identity_memo)
    with caught_warnings() as said:
        captured = _guarded(obj, name, options, payloads, reuse, plain_payload, identify,
                            identity_memo)
    if not said:
        return captured
    note = "warning while capturing: " + "; ".join(said[:3])
    preview = dict(captured.preview, warnings=said[:10])
    return dataclasses.replace(captured, preview=preview, error=f"{captured.error}; {note}"
                               if captured.error else note)


def _guarded(obj: Any, name: str | None, options: ValueOptions, payloads: bool,
             reuse: dict[int, list] | None, plain_payload: bytes | None,
             identify: bool = True, identity_memo: list[Any] | None = None) -> CapturedValue:
    try:
        if name is not None and options.redacts(name, obj):
            return CapturedValue(redacted_preview(obj), None, None)
        builder = PreviewBuilder(options, reuse=reuse)
        preview = builder.build(obj)
        if preview.get("machinery") is True and MACHINERY.lookup(type(obj)) is not None:
            return CapturedValue(preview, None, None)  # framework machinery: preview alone
        if _all_machinery(obj):  # a list of tools or handoffs handed to a model
            preview["machinery"] = True
            return CapturedValue(preview, None, None)
        # (a digest over a secret is guessable; ints that may be addresses compare by it)
        if (identify or builder.addresses) and not builder.secret_values:
            digest = capture_identity(obj, identity_memo)
            if digest is not None:
                preview["identity"] = digest
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
    except Exception as exc:  # noqa: BLE001 - capture must never raise into user code
        if exc.__class__ is not RecursionError and signal_of(exc) is not None:
            raise  # the program's signal handler raised it here: the program's, not ours
        reason = f"capture failed: {type(exc).__name__}"
        preview = {"type": "?", "repr": "<capture failed>",
                   "placeholder": {"reason": reason, "path": name or ""}}
        return CapturedValue(preview, None, None, reason)


def _all_machinery(obj: Any) -> bool:
    """A non-empty list or tuple of framework machinery only (``MACHINERY``); the first item
    decides at once for the usual lists of data."""
    if type(obj) not in (list, tuple) or not obj or len(obj) > 1000:
        return False
    if MACHINERY.lookup(type(obj[0])) is None:
        return False
    return all(MACHINERY.lookup(type(item)) is not None for item in obj)


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
    elif result.data is not None and result.error:  # warnings raised while serializing
        error = f"{error}; {result.error}" if error else result.error
    return CapturedValue(preview, result.data, result.serializer, error, result.placeholders,
                         result.redacted)
