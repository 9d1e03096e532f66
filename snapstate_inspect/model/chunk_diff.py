"""Full-value diff of two big dicts stored chunk by chunk, reading only the chunks that differ.

A dict over the chunk size is stored as a chunked payload (``snapstate_capture.capture.chunked``):
content-addressed chunks of its ``(key, value)`` pairs in insertion order, the same content
giving the same chunk keys. ``diff_chunked(a, b, …)`` compares the two values' chunk keys
position by position (``payload_chunks``: manifests only), loads just the chunks whose keys
differ (``load_chunks``: the trust check of ``Value.load`` first, every blob hash-checked),
and walks those partial dicts key by key (``value_diff.diff_maps``).

Why that is the whole diff: a chunk with the same key on both sides holds the same pairs on
both sides, and a dict's keys are unique, so no key of such a chunk appears anywhere else on
either side; every key added, removed or changed is in a differing chunk, and walking the
partial dicts visits them in the order the walk of the whole dicts does (``diff_maps`` walks
the root as a big dict, as ``diff_objects`` walks a dict over ``DiffOptions.small``).

None (the caller loads the whole values) when that does not hold or does not pay: either side
not a chunked dict (a list, a small dict, an encrypted or unpickled value), different numbers
of chunks, more than half of the chunks differing (a key removed near the front shifts every
chunk after it), or anything unexpected while loading (the whole load reports it).
"""

from __future__ import annotations

from typing import Any

from snapstate_capture import SnapStateError, Value
from snapstate_capture.trust.payload_chunks import load_chunks, payload_chunks
from snapstate_capture.values.identity import same_objects

from .value_diff import Budget, DiffOptions, ValueDiff, diff_maps

#: Past this share of differing chunks the whole load costs about the same: take it.
MAX_DIFFERING = 0.5


def diff_chunked(a: Value, b: Value, preview_len: tuple[Any, Any], options: DiffOptions,
                 budget: Budget) -> ValueDiff | None:
    """The full-value diff of ``a`` → ``b`` (what loading both and ``diff_objects`` gives)
    from their differing chunks, or None when the caller must load the whole values.
    ``preview_len``: the ``len`` their previews show (the walk treats a dict as big by it).
    A value the trust gate refuses gives None too (the whole load then says why)."""
    if not any(type(n) is int and n >= options.small for n in preview_len):
        return None
    try:
        chunks_a, chunks_b = payload_chunks(a), payload_chunks(b)
    except SnapStateError:
        return None
    if (chunks_a is None or chunks_b is None or chunks_a.kind != "dict"
            or chunks_b.kind != "dict" or len(chunks_a.keys) != len(chunks_b.keys)):
        return None
    differing = [i for i, (x, y) in enumerate(zip(chunks_a.keys, chunks_b.keys)) if x != y]
    if len(differing) > len(chunks_a.keys) * MAX_DIFFERING:
        return None
    try:
        part_a = _join(load_chunks(a, chunks_a, differing, trust=options.trust))
        part_b = _join(load_chunks(b, chunks_b, differing, trust=options.trust))
    except (SnapStateError, TypeError, ValueError):  # refused by the gate, too: the load says why
        return None
    if part_a is None or part_b is None:
        return None
    if same_objects(part_a, part_b):
        return ValueDiff()
    try:
        return diff_maps(part_a, part_b, options=options, budget=budget)
    except Exception:  # noqa: BLE001 - a loaded key's own code raised: the whole diff decides
        return None


def _join(chunks: list[list[Any]]) -> dict[Any, Any] | None:
    """The pairs of ``chunks`` as one dict (as ``chunked.join_dict`` builds the whole one);
    None when a chunk holds something other than pairs or a key repeats across chunks."""
    out: dict[Any, Any] = {}
    count = 0
    for items in chunks:
        if not all(type(item) is tuple and len(item) == 2 for item in items):
            return None
        out.update(items)
        count += len(items)
    return out if len(out) == count else None
