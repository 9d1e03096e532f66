"""Values computed from the addresses of the interpreter's own objects: the iteration order of
a set of builtin types and ``hash(None)`` (both address-derived on 3.11), checkpointed."""

import snapstate_capture as snap


def address_values():
    order = [kind.__name__ for kind in {int, str, float, bytes, list, dict, tuple, set}]
    return order, hash(None)


order, none_hash = address_values()
snap.checkpoint("hashed", order=order, none_hash=none_hash)
print(" ".join(order))
