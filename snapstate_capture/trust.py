"""The trust gate: the one place where a payload from a timeline file is unpickled.

Unpickling runs code chosen by whoever wrote the file (DESIGN.md "Trust"). A payload is loaded
only when the caller vouches for the file (``trust=True`` / ``--trust``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import PayloadLoadError, UntrustedPayloadError
from .values import loads

if TYPE_CHECKING:
    from .store.reader import Value


def load_payload(value: Value, *, trust: bool) -> Any:
    """Return the object stored in ``value``'s payload.

    Raises ``UntrustedPayloadError`` when ``trust`` is False, ``PayloadLoadError`` when the value
    has no payload or unpickling fails, ``IntegrityError`` when the payload bytes are corrupt.
    """
    if not trust:
        raise UntrustedPayloadError(
            f"{value.timeline.path}: refusing to load {value.name!r}: loading a payload runs code "
            "from the file; open it with trust=True (--trust) only if you trust the file")
    if getattr(value, "is_inline", False):
        return value.ref["v"]  # a scalar stored as plain data: nothing to unpickle
    if not value.payload_key or not value.serializer:
        reason = (value.preview.get("placeholder") or {}).get("reason", "no payload stored")
        raise PayloadLoadError(f"{value.timeline.path}: {value.name!r} has no payload ({reason})")
    data = value.timeline.blob(value.payload_key)
    try:
        return loads(value.serializer, data)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is reported the same way
        raise PayloadLoadError(
            f"{value.timeline.path}: {value.name!r} could not be loaded: "
            f"{type(exc).__name__}: {exc}") from exc
