"""Chunked payloads: a big list or dict stored as content-addressed chunks of its elements.

A chunked payload is still one pickle (``"s": "pickle"``), so ``Value.load`` and the trust gate
are unchanged: its bytes (``values/chunk_layout.py``) call ``join_list(chunk0, chunk1, …)``
(``join_dict`` for dicts, whose chunks are lists of ``(key, value)`` pairs in insertion order)
when loaded. The writer stores those bytes as a manifest (``store/blobs.py``): a header piece,
one piece per chunk, a trailer piece. Appending to a list changes only its last chunk; setting
one key of a dict changes only the chunk holding that key, so the file grows with what changed,
not with the container (docs/storage.md).

Chunk boundaries depend only on the container's content (``chunk_size``), so the same value
always gets the same key — replay compares value hashes.
"""

from __future__ import annotations

import pickle
from typing import Any

PROTOCOL = 5
#: Chunk sizes in elements: small for containers of containers (each element is big and may be
#: mutated in place), large for containers of scalars and strings.
CONTAINER_CHUNK = 16
SCALAR_CHUNK = 256
SCALAR_TYPES = frozenset({int, float, bool, type(None), str, bytes, complex})


def join_list(*chunks: bytes) -> list[Any]:
    """Rebuild a chunked list: unpickle each chunk (a list slice) and concatenate them.

    Runs only inside a payload load, which has passed the trust gate (``trust.py``).
    """
    from ..values import loads

    out: list[Any] = []
    for chunk in chunks:
        out.extend(loads("pickle", chunk))
    return out


def join_dict(*chunks: bytes) -> dict[Any, Any]:
    """Rebuild a chunked dict: unpickle each chunk (a list of ``(key, value)``) in order."""
    from ..values import loads

    out: dict[Any, Any] = {}
    for chunk in chunks:
        out.update(loads("pickle", chunk))
    return out


def chunk_size(container: list | dict) -> int:
    """Elements per chunk of a non-empty exact list or dict, decided by its first element (a
    dict: its first value): ``SCALAR_CHUNK`` for a scalar, else ``CONTAINER_CHUNK``."""
    first = container[0] if type(container) is list else next(iter(dict.values(container)))
    return SCALAR_CHUNK if type(first) in SCALAR_TYPES else CONTAINER_CHUNK


def dumps_chunk(items: list[Any]) -> bytes:
    """Pickle one chunk (raises what pickle raises)."""
    return pickle.dumps(items, PROTOCOL)
