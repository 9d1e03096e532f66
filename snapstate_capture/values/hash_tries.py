"""rpds' persistent maps and sets (``HashTrieMap``, ``HashTrieSet``: jsonschema's and
referencing's registries) shown in a canonical order.

rpds iterates, reprs and pickles them in an order of the process's hash seed, so two runs of
one program holding a jsonschema validator gave two previews and two payloads of one value
(``snapstate diff``: "differs beyond the preview" at every step). Their members are put in the
order ``preview.member_order`` gives a set's in previews: scalars by type name and value, other members by
identity digest. Iterating a trie runs none of the program's code; looking a key up would run
its ``__hash__``/``__eq__``, so values are paired with their keys by identity. Identity
digests already take their members in any order (``identity._UNORDERED_REDUCED``). Payloads
keep rpds' order, as they keep a set's: the C pickler writes sets as it iterates them and asks
no ``reducer_override`` for them, so payload bytes are not comparable across runs anyway.
"""

from __future__ import annotations

from typing import Any

from .preview import PREVIEWS, PreviewBuilder, _key_label, clip, member_order

__all__ = ["members"]

_NAMES = ("HashTrieMap", "HashTrieSet")


def members(trie: Any) -> list[tuple[Any, Any]]:
    """``[(key, value)]`` of a ``HashTrieMap`` (``[(member, None)]`` of a ``HashTrieSet``) in
    canonical order; tries over ``preview.SORTED_MEMBERS_MAX`` members keep rpds' order."""
    if type(trie).__name__ == "HashTrieMap":
        pairs = list(trie.items())
    else:
        pairs = [(member, None) for member in trie]
    value_of = {id(key): value for key, value in pairs}
    return [(key, value_of[id(key)]) for key in member_order((k for k, _ in pairs), len(pairs))]


@PREVIEWS.register(*(f"rpds.{name}" for name in _NAMES))
def _preview(builder: PreviewBuilder, trie: Any, node: dict, depth: int,
             path_ids: set) -> dict:
    size = len(trie)
    is_map = type(trie).__name__ == "HashTrieMap"
    shown = members(trie)[:builder.options.max_items]
    if is_map:
        items = [(_key_label(key), value) for key, value in shown]
    else:
        items = [(f"{{{i}}}", member) for i, (member, _) in enumerate(shown)]
    node["len"] = size
    builder.fill_children(node, trie, items, size, depth, path_ids, repr_text="-")
    kids = node.get("children")
    if kids is None:
        node["repr"] = f"<{type(trie).__name__} of {size} items>"
        return node
    parts = [f"{label[1:-1]}: {child['repr']}" if is_map else child["repr"]
             for label, child in kids]
    if size > len(kids):
        parts.append("…")
    node["repr"] = clip(f"{type(trie).__name__}({{{', '.join(parts)}}})",
                        builder.options.max_repr)
    return node
