"""How a preview is stored: a top node, with its children by reference when they are large.

A stored preview is the preview dict of ``values/preview.py``, except that ``"children"`` may be
replaced by ``"kids": <hex key>`` naming a blob that holds the children list as JSON. The capture
side does this when the children are large (``valuecache.KIDS_MIN``), so a value whose length
alone changed — a list that was appended to — stores a new top node of a few hundred bytes and
reuses its children blob (docs/storage.md). Readers always see the joined dict.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def join(top: Any, load: Callable[[str], Any]) -> Any:
    """Return stored preview ``top`` with ``"kids"`` replaced by the children ``load(key)`` gives.

    ``load`` returns the decoded JSON of a blob (or None when it is not available, in which case
    the preview has no children). Anything that is not a dict is returned unchanged.
    """
    if not isinstance(top, dict) or not isinstance(top.get("kids"), str):
        return top
    children = load(top["kids"])
    joined = {k: v for k, v in top.items() if k != "kids"}
    joined["children"] = children if isinstance(children, list) else []
    return joined


def from_blobs(blobs: dict[str, bytes], key: str | None) -> Any:
    """The preview ``key`` from a step's pending ``blobs`` (hex key -> bytes), joined; None when
    the top node is not among them."""
    if not key or key not in blobs:
        return None

    def load(kids: str) -> Any:
        return json.loads(blobs[kids]) if kids in blobs else None

    return join(json.loads(blobs[key]), load)
