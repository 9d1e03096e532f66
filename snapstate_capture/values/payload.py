"""Payloads: the serialized form of a captured value, loadable later with trust.

Order of attempts (DESIGN.md "Capture rules"): pickle protocol 5, then dill for what pickle
refuses. Whatever neither can serialize becomes a placeholder: no payload, and the reason is
kept in the preview. Every exception, RecursionError included, is caught here.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field
from typing import Any

from ..options import ValueOptions

PROTOCOL = 5


@dataclass(frozen=True)
class Serialized:
    """Outcome of serializing one value.

    ``data`` is the payload bytes or None; ``serializer`` is ``"pickle"``, ``"dill"`` or None;
    ``error`` says why there is no payload (or why it is not loadable); ``loadable`` is False
    when a test-load failed, None when not tested; ``placeholders`` lists the JSON form of every
    part replaced by a placeholder.
    """

    data: bytes | None
    serializer: str | None
    error: str | None = None
    loadable: bool | None = None
    placeholders: tuple[dict[str, str], ...] = field(default_factory=tuple)


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - str() of a hostile exception
        text = "?"
    return f"{type(exc).__name__}: {text[:200]}"


def serialize(obj: Any, options: ValueOptions) -> Serialized:
    """Serialize ``obj`` with pickle, else dill; never raises.

    Returns ``Serialized(data=None, ...)`` with the reason when neither works or the result is
    larger than ``options.max_payload_bytes``. When ``options.test_load`` is on and the payload is
    at most ``options.test_load_limit`` bytes, it is loaded back once to detect values that
    serialize but cannot be loaded (reported as ``loadable=False``).
    """
    errors = []
    for name, dumps in (("pickle", _pickle_dumps), ("dill", _dill_dumps)):
        try:
            data = dumps(obj)
        except BaseException as exc:  # noqa: BLE001 - user objects may raise anything here
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            errors.append(f"{name}: {_describe(exc)}")
            continue
        if len(data) > options.max_payload_bytes:
            return Serialized(None, None, f"payload too large ({len(data)} bytes)")
        loadable, load_error = _test_load(name, data, options)
        return Serialized(data, name, load_error, loadable)
    return Serialized(None, None, "; ".join(errors))


def _pickle_dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    pickle.Pickler(buffer, protocol=PROTOCOL).dump(obj)
    return buffer.getvalue()


def _dill_dumps(obj: Any) -> bytes:
    import dill  # imported lazily: most values never need it

    return dill.dumps(obj, protocol=PROTOCOL, recurse=True)


def _test_load(serializer: str, data: bytes, options: ValueOptions) -> tuple[bool | None, str | None]:
    if not options.test_load or len(data) > options.test_load_limit:
        return None, None
    try:
        loads(serializer, data)
    except BaseException as exc:  # noqa: BLE001 - any failure means "not loadable"
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return False, f"not loadable: {_describe(exc)}"
    return True, None


def loads(serializer: str, data: bytes) -> Any:
    """Turn payload ``data`` written by ``serializer`` back into an object.

    This runs code from the payload: callers must have passed the trust check first
    (``snapstate_capture.trust``). Raises whatever the unpickler raises.
    """
    if serializer == "dill":
        import dill

        return dill.loads(data)
    if serializer == "pickle":
        return pickle.loads(data)
    raise ValueError(f"unknown serializer {serializer!r}")
