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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import PayloadLoadError
from ..values import loads
from ..values.chunk_layout import KINDS, TRAILER, unpiece
from .gate import require_value_trust

if TYPE_CHECKING:
    from ..store.reader import Value


@dataclass(frozen=True)
class PayloadChunks:
    """The chunks of the chunked payload ``payload`` (its hex blob key): ``kind`` ``dict`` or
    ``list``, ``keys`` the hex keys of its chunk pieces in order (content hashes: equal keys,
    equal chunks)."""

    payload: str
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
    kind = KINDS.get(timeline.blob(top[0], limit=256))
    if kind is None or timeline.blob(top[-1], limit=256) != TRAILER:
        return None
    middle = top[1:-1]
    if timeline.blob_pieces(middle[0]) is None:
        return PayloadChunks(ref["b"], kind, tuple(middle))  # the chunks (at most FANOUT)
    keys: list[str] = []
    for group in middle:  # group manifests of chunk keys, as the recorder writes past FANOUT
        pieces = timeline.blob_pieces(group)
        keys.extend(pieces if pieces is not None else [group])
    return PayloadChunks(ref["b"], kind, tuple(keys))


def load_chunks(value: Value, layout: PayloadChunks, positions: list[int], *, trust: bool
                ) -> list[list[Any]]:
    """Unpickle the chunks at ``positions`` (indexes into ``layout.keys``) of ``value``'s
    payload, whose ``layout`` is ``payload_chunks(value)``: each a list of elements (a dict's:
    ``(key, value)`` pairs), in the order of ``positions``.

    Raises ``UntrustedPayloadError`` as ``Value.load`` does (the same check, first);
    ``PayloadLoadError`` for a layout of another payload, a position out of range, a blob that
    is not one chunk piece, or a chunk that does not unpickle to a list; ``IntegrityError``
    for corrupt bytes.
    """
    require_value_trust(value, trust=trust)
    where = f"{value.timeline.path}: {value.name!r}"
    if value.ref.get("b") != layout.payload:
        raise PayloadLoadError(f"{where}: the chunk layout given is another payload's")
    out = []
    for position in positions:
        if not 0 <= position < len(layout.keys):
            raise PayloadLoadError(f"{where}: its payload has no chunk {position}")
        key = layout.keys[position]
        chunk = unpiece(value.timeline.blob(key))
        if chunk is None:
            raise PayloadLoadError(f"{where}: chunk {key[:12]} is not one chunk piece")
        try:
            items = loads("pickle", chunk)
        except Exception as exc:  # noqa: BLE001 - reported as any payload that does not load
            raise PayloadLoadError(f"{where}: chunk {key[:12]} could not be loaded: "
                                   f"{type(exc).__name__}: {exc}") from exc
        if type(items) is not list:
            raise PayloadLoadError(f"{where}: chunk {key[:12]} is not a list")
        out.append(items)
    return out
