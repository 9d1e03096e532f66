"""Canonical JSON of a preview, re-using the bytes of children encoded at an earlier step.

``integrity.canonical_json`` (sorted keys, ``","``/``":"`` separators, UTF-8) is compositional:
a list encodes as ``[`` + its items' encodings joined by ``,`` + ``]``, and ``"children"`` sorts
before every other key a preview node has (``len``, ``more``, ``repr``, ``type``, …). So the
encoding of a preview whose children were mostly reused (``PreviewBuilder.reuse``) can be
assembled from the children's earlier bytes, and it is byte for byte what ``canonical_json``
of the whole preview gives (a test compares them). For W1's 100-key scratchpad this turns
~45 µs of JSON encoding per step into a few µs.
"""

from __future__ import annotations

from itertools import compress
from operator import is_, not_
from typing import Any

from ..store.hashing import canonical_json

_OPEN = b'{"children":['
#: The memo's entry holding the last encoding's children pairs and their bytes (positions of
#: children are 0 and up; -1 is ``values.preview_again``'s).
_ENCODED = -2


def encode_preview(preview: dict[str, Any], memo: dict[int, list] | None) -> bytes:
    """``canonical_json(preview)``, with each child ``[label, node]`` whose node is the one
    recorded in ``memo`` (position -> ``[label, value, node, bytes or None]``, filled by
    ``PreviewBuilder``) encoded once and its bytes kept in the memo."""
    children = preview.get("children")
    if (not memo or type(children) is not list or not children or len(preview) < 2
            or min(preview) != "children"):
        return canonical_json(preview)
    last = memo.get(_ENCODED)
    if last is not None and len(last[0]) == len(children):
        # The same [label, node] pair objects as at the last encoding (a dict rebuilt by
        # ``values/preview_again.py``): only the other positions are looked at.
        old_children, old_parts = last
        parts = list(old_parts)
        stale = compress(range(len(children)), map(not_, map(is_, children, old_children)))
    else:
        parts = [b""] * len(children)
        stale = range(len(children))
    for position in stale:
        pair = children[position]
        known = memo.get(position)
        if known is not None and known[2] is pair[1] and known[0] == pair[0]:
            if known[3] is None:
                known[3] = canonical_json(pair)
            parts[position] = known[3]
        else:
            parts[position] = canonical_json(pair)
    memo[_ENCODED] = (list(children), parts)
    rest = canonical_json({k: v for k, v in preview.items() if k != "children"})
    return _OPEN + b",".join(parts) + b"]," + rest[1:]
