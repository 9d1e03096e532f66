"""The top-level preview of an exact dict built again from its previous one (issue 19).

W1's scratchpad (100 keys, one set per step) and any table whose values are set in place keep
the same key objects in the same order; only the children whose value is another object need
building, and the rest is C-speed comparisons of identities. ``PreviewBuilder._dict_again``
calls ``dict_again``; the full build (``PreviewBuilder._builtin_container``) stores what it
needs under ``_AGAIN`` in the builder's ``reuse`` memo.
"""

from __future__ import annotations

from itertools import compress
from operator import is_, not_
from typing import TYPE_CHECKING, Any

from . import secret_shapes

if TYPE_CHECKING:
    from .preview import PreviewBuilder

#: The ``reuse`` memo's entry holding the last top-level dict's keys, values, items and
#: children; child positions are 0 and up.
_AGAIN = -1
_IMMUTABLE = frozenset({str, bytes, int, float, complex, bool, type(None)})


def dict_again(builder: "PreviewBuilder", obj: dict, node: dict[str, Any], path_ids: set[int]
               ) -> dict[str, Any] | None:
    """See ``PreviewBuilder._dict_again``."""
    memo = builder.reuse
    last = memo.get(_AGAIN)  # type: ignore[union-attr]
    if last is None:
        return None
    old_keys, old_values, old_items, old_kids, old_repr, span = last
    try:
        keys, values = list(obj), list(dict.values(obj))
    except RuntimeError:  # changed size while read (another thread)
        return None
    total, limit = len(keys), builder.options.max_items
    if (total != len(old_keys) or len(values) != total
            or not all(map(is_, keys, old_keys))
            or not set(map(type, values[:limit])) <= _IMMUTABLE):
        # (the keys were immutable scalars at the last build: the same objects still are)
        return None
    items, kids = list(old_items), list(old_kids)
    text_limit = min(builder.options.max_string, builder.options.max_repr)
    shapes = builder.options.secret_shapes and builder.options.redact_secrets
    changed = list(compress(range(min(total, limit)), map(not_, map(is_, values, old_values))))
    for position in changed:
        label, key, _ = items[position]
        value = values[position]
        if key is not None and builder.is_secret(key):
            return None
        if type(value) is str:  # as the full build's inlined leaf
            size = len(value)
            if shapes and size >= 16:
                builder.secret_values.extend(secret_shapes.find(value))
            text = repr(value if size <= text_limit else value[:text_limit])
            if len(text) > text_limit:
                text = text[:text_limit - 1] + "…"
            child = {"type": "builtins.str", "len": size, "repr": text}
        else:
            child = builder.node(value, 1, path_ids)
        if builder.secret_values:
            return None
        items[position] = (label, key, value)
        kids[position] = [label, child]
        memo[position] = [label, value, child, None]  # type: ignore[index]
    node["len"] = total
    node["children"] = kids
    if total > len(kids):
        node["more"] = total - len(kids)
    if changed and changed[0] < span:
        old_repr, span = builder.container_repr_span(obj, dict, items, total, kids)
    node["repr"] = old_repr  # the children it is made of are the same objects: the same text
    memo[_AGAIN] = (keys, values[:limit], items, kids, old_repr, span)  # type: ignore[index]
    return node
