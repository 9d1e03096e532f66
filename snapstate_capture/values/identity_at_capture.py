"""Value identity at capture: the bounded identity digest each preview stores.

``capture_identity`` runs for every value of every captured step, so it is kept cheap: a value
with more than ``CAPTURE_BUDGET`` parts is stored without a digest (compared by payload, or by a
full ``identity`` where both sides are loaded), a class whose instances went over the budget
``OVER_BUDGET_LIMIT`` times is not walked again, and an exact dict of scalars re-hashes only the
items that are not the same objects as at the slot's last capture (``_flat_dict``) — the digest
``identity`` (``identity.py``) gives it all the same (``docs/value-identity.md``).
"""

from __future__ import annotations

import weakref
from bisect import bisect_left, insort
from itertools import compress
from operator import and_ as _and, is_ as _is, is_not as _is_not, not_ as _not
from typing import Any

from .addresses import could_be_live_address, local_address, stack_addresses
from .code_identity import _blake, _h
from .identity import _ADDRESS, _SCALAR_TYPES, _scalar, identity

__all__ = ["CAPTURE_BUDGET", "OVER_BUDGET_LIMIT", "capture_identity"]

#: The budget at capture time (``capture_identity``): a value with more parts is stored without
#: an identity digest and compared by payload, or by a full ``identity`` where both sides are
#: loaded (replay). Keeps capture cheap: a 5,000-part walk costs a few milliseconds.
CAPTURE_BUDGET = 5_000
#: Classes whose instances went over ``CAPTURE_BUDGET`` this often are not walked again at
#: capture (a big object changed at every step would pay the walk at every step).
OVER_BUDGET_LIMIT = 3

#: ``_h``'s length prefix of a 16-byte part.
_PREFIX16 = (16).to_bytes(4, "little")
_DICT_TAG = len(b"dict").to_bytes(4, "little") + b"dict"


def _flat_dict(obj: dict, memo: list[Any]) -> str | None:
    """``identity`` of an exact dict whose keys and values are all scalars, or None for any
    other dict (or one holding an int that is an address, ``_names_an_address``: ``identity``
    digests it as what it names; in the incremental case below only the ints that changed are
    looked up — one that stays while an object comes to live at its address is not). Each
    item's digest is ``_h(_scalar(key), _scalar(value))`` (what the walker
    computes) and the dict's is the hash of those digests sorted (any order of items gives the
    same). ``memo`` holds the previous call's keys and values (kept alive: their ids cannot be
    reused), the item digests, their sorted list and the dict's digest. When the keys are the
    same objects in the same order, only the items whose value is another object are hashed
    and moved in the sorted list (no type scan, no sort: those are the only new objects) —
    scalars are immutable, so that is exact; any other change hashes the items that are not
    the same objects and sorts again. Comparisons run at C speed."""
    keys = list(obj)
    values = list(dict.values(obj))
    if len(memo) == 5 and len(keys) == len(memo[0]) and all(map(_is, keys, memo[0])):
        old_values, parts, ordered, digest = memo[1:]
        changed = list(compress(range(len(values)), map(_is_not, values, old_values)))
        if changed:
            kinds = {type(values[i]) for i in changed}
            if not kinds <= _SCALAR_TYPES or (int in kinds and _names_an_address(
                    obj, [values[i] for i in changed])):
                memo.clear()  # (an address: ``identity`` digests it as what it names)
                return None
            parts, ordered = list(parts), list(ordered)
            for i in changed:
                del ordered[bisect_left(ordered, parts[i])]
                key, value = keys[i], values[i]
                parts[i] = _PREFIX16 + _h(_scalar(key, type(key)), _scalar(value, type(value)))
                insort(ordered, parts[i])
            digest = _blake(_DICT_TAG + b"".join(ordered), digest_size=16).hexdigest()
        memo[:] = [keys, values, parts, ordered, digest]
        return digest
    key_kinds, value_kinds = set(map(type, keys)), set(map(type, values))
    if not (key_kinds <= _SCALAR_TYPES and value_kinds <= _SCALAR_TYPES) or (
            int in key_kinds | value_kinds and _names_an_address(obj, [*keys, *values])):
        memo.clear()
        return None
    if memo:
        old_keys, old_values, old_parts = memo[:3]
        same = list(map(_and, map(_is, keys, old_keys), map(_is, values, old_values)))
        parts = old_parts[:len(keys)] + [b""] * (len(keys) - len(old_parts))
        stale = [*compress(range(len(same)), map(_not, same)), *range(len(same), len(keys))]
    else:
        parts = [b""] * len(keys)
        stale = range(len(keys))
    for i in stale:
        key, value = keys[i], values[i]
        parts[i] = _PREFIX16 + _h(_scalar(key, type(key)), _scalar(value, type(value)))
    ordered = sorted(parts)
    digest = _blake(_DICT_TAG + b"".join(ordered), digest_size=16).hexdigest()
    memo[:] = [keys, values, parts, ordered, digest]
    return digest


def _names_an_address(obj: dict, parts: list[Any]) -> bool:
    """Whether an int among ``parts`` (``obj``'s keys and values, scalars) is an address that
    ``identity`` would digest as what it names: the dict's own id, or a local's or an object's
    beneath the locals (``addresses.stack_addresses``, as ``identity`` looks them up). Ints
    that merely could be addresses (a byte count, a timestamp in ms: one in eight is aligned)
    stay plain, so such a dict keeps its incremental digest; before, any of them sent every
    capture of it through the whole walk and the stack search."""
    big = {part for part in parts if type(part) is int and could_be_live_address(part)}
    return bool(big) and (id(obj) in big or bool(stack_addresses(big, memo=True)))


_OVER_BUDGET: "weakref.WeakKeyDictionary[type, int]" = weakref.WeakKeyDictionary()
_SIZED = (list, tuple, dict, set, frozenset)


def capture_identity(obj: Any, memo: list[Any] | None = None) -> str | None:
    """``identity(obj)`` within ``CAPTURE_BUDGET``, as stored in a preview (``"identity"``);
    for an int that is the id of a local on the stack, "an address" and the local's function
    and name (``addresses.local_address``); None for other scalars (their pickle is canonical), for values over budget, and at once for builtin containers longer than the budget
    and for classes whose instances went over it ``OVER_BUDGET_LIMIT`` times.
    ``memo``: kept by the caller between captures of the same slot (start with ``[]``); an
    exact dict of scalars then re-hashes only the items that are not the same objects as at
    the last call (``_flat_dict``)."""
    cls = type(obj)
    if cls in _SCALAR_TYPES:
        where = local_address(obj) if cls is int else None
        if where is not None:  # the id of a local: an address, named as ``identity`` does
            return _h(b"v", _h(_ADDRESS, b"local " + where.encode())).hex()
        return None  # a scalar's payload pickle is its canonical form already
    if cls in _SIZED and len(obj) > CAPTURE_BUDGET:
        return None
    if memo is not None and cls is dict:
        digest = _flat_dict(obj, memo)
        if digest is not None:
            return digest
    misses = _OVER_BUDGET.get(cls, 0) if cls not in _SIZED else 0
    if misses >= OVER_BUDGET_LIMIT:
        return None
    digest = identity(obj, budget=CAPTURE_BUDGET)
    if digest is None and cls not in _SIZED:
        try:
            _OVER_BUDGET[cls] = misses + 1
        except TypeError:  # not weak-referenceable: walked again next time
            return None
    return digest
