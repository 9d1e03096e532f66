"""A chunked payload read chunk by chunk: which chunks it is made of, and loading a few of them.

A big dict or list is stored as a chunked payload (``capture/chunked.py``): a manifest of a
header piece, the chunk pieces (or, past ``FANOUT`` chunks, group manifests of chunk pieces)
and a trailer piece, each chunk piece one ``BINBYTES8`` item holding the pickle of a slice of
the elements (a dict's as ``(key, value)`` pairs). Chunk boundaries follow the content, and
equal chunks have equal keys, so two versions of the value can be compared chunk key by chunk
key without reading a chunk (``snapstate_inspect.model.chunk_diff``).

``payload_chunks`` reads manifests only (hash-checked, nothing unpickled: no trust needed).
``load_chunks`` unpickles chunks of the value's own payload, after the same trust check as
``Value.load`` (``gate.require_value_trust``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import PayloadLoadError
from ..values import loads
from .gate import require_value_trust

if TYPE_CHECKING:
    from ..store.reader import Value


def _short_str(text: str) -> bytes:
    data = text.encode("utf-8")
    return b"\x8c" + bytes([len(data)]) + data


def _header(function: str) -> bytes:
    # ``capture.chunked``'s headers (that layer is above this one; a test checks they agree)
    return (b"\x80\x05" + _short_str("snapstate_capture.capture.chunked")
            + _short_str(function) + b"\x93(")


HEADERS = {_header("join_dict"): "dict", _header("join_list"): "list"}
TRAILER = b"tR."


@dataclass(frozen=True)
class PayloadChunks:
    """The chunks of a chunked payload: ``kind`` ``dict`` or ``list``, ``keys`` the hex keys
    of its chunk pieces in order (content hashes: equal keys, equal chunks)."""

    kind: str
    keys: tuple[str, ...]


def payload_chunks(value: Value) -> PayloadChunks | None:
    """The chunks of ``value``'s payload, or None when it is not a chunked payload (no payload,
    inline, encrypted, not a pickle, not a manifest of the chunked layout). Reads manifests, the
    header and trailer pieces and the first chunk only (whether the top manifest lists chunks
    or group manifests); raises ``IntegrityError`` for a blob that does not match its hash.
    A key listed is a chunk piece as the recorder writes them, or — in a file it did not
    write — anything: ``load_chunks`` refuses what is not one chunk piece, and equal keys are
    equal content either way."""
    ref = value.ref
    if (getattr(value, "is_inline", False) or ref.get("x") or ref.get("s") != "pickle"
            or not isinstance(ref.get("b"), str)):
        return None
    timeline = value.timeline
    top = timeline.blob_pieces(ref["b"])
    if top is None or len(top) < 3:
        return None
    kind = HEADERS.get(timeline.blob(top[0], limit=256))
    if kind is None or timeline.blob(top[-1], limit=256) != TRAILER:
        return None
    middle = top[1:-1]
    if timeline.blob_pieces(middle[0]) is None:
        return PayloadChunks(kind, tuple(middle))  # the chunks themselves (at most FANOUT)
    keys: list[str] = []
    for group in middle:  # group manifests of chunk keys, as the recorder writes past FANOUT
        pieces = timeline.blob_pieces(group)
        keys.extend(pieces if pieces is not None else [group])
    return PayloadChunks(kind, tuple(keys))


def load_chunks(value: Value, keys: list[str], *, trust: bool) -> list[list[Any]]:
    """Unpickle the chunks ``keys`` (from ``payload_chunks(value).keys``) of ``value``'s
    payload: each a list of elements (a dict's: ``(key, value)`` pairs).

    Raises ``UntrustedPayloadError`` as ``Value.load`` does (the same check, first);
    ``PayloadLoadError`` for a key that is no chunk of this payload, a piece that is not one
    chunk, or a chunk that does not unpickle to a list; ``IntegrityError`` for corrupt bytes.
    """
    require_value_trust(value, trust=trust)
    layout = payload_chunks(value)
    own = set(layout.keys) if layout is not None else set()
    out = []
    for key in keys:
        if key not in own:
            raise PayloadLoadError(f"{value.timeline.path}: {value.name!r}: blob {key[:12]} "
                                   "is no chunk of its payload")
        data = value.timeline.blob(key)
        if len(data) < 9 or data[0] != 0x8E or struct.unpack("<Q", data[1:9])[0] != len(data) - 9:
            raise PayloadLoadError(f"{value.timeline.path}: {value.name!r}: chunk {key[:12]} "
                                   "is not one chunk piece")
        try:
            items = loads("pickle", data[9:])
        except Exception as exc:  # noqa: BLE001 - reported as any payload that does not load
            raise PayloadLoadError(f"{value.timeline.path}: {value.name!r}: chunk {key[:12]} "
                                   f"could not be loaded: {type(exc).__name__}: {exc}") from exc
        if type(items) is not list:
            raise PayloadLoadError(f"{value.timeline.path}: {value.name!r}: chunk {key[:12]} "
                                   "is not a list")
        out.append(items)
    return out
