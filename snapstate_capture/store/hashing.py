"""Content hashes and the per-run step hash chain.

Hashes are BLAKE2b with a 16-byte digest (hashlib, stdlib): fast in C and collision-resistant
enough for content addressing inside one file. Step records are chained,
``hash_i = H(hash_{i-1} || canonical(step_i))``, so editing, removing or reordering any step
changes every later hash and the run's chain head (DESIGN.md "The timeline file").
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

DIGEST_SIZE = 16
#: The chain value before step 0 of every run.
GENESIS = b"\x00" * DIGEST_SIZE


def content_hash(data: bytes) -> bytes:
    """Return the 16-byte BLAKE2b digest of ``data`` (the key of a blob)."""
    return hashlib.blake2b(data, digest_size=DIGEST_SIZE).digest()


#: The encoder of ``canonical_json``, made once (``json.dumps`` makes one per call). Without
#: the circular-reference check: what is encoded is SnapState's own acyclic JSON (previews,
#: frame records, statements), and the check's per-container bookkeeping was ~30% of encoding
#: a value's preview (a 3 kB preview: ~33 -> ~25 µs). A cycle that got in by a bug would raise
#: RecursionError instead of ValueError; either is caught as a capture error.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=True, check_circular=False)


def canonical_json(obj: Any) -> bytes:
    """Serialize JSON-able ``obj`` deterministically (sorted keys, no spaces, UTF-8): the bytes
    ``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` gives.
    Raises ``TypeError`` for what JSON cannot hold, ``RecursionError`` for a cycle."""
    return _CANONICAL.encode(obj).encode("utf-8")


def chain_hash(previous: bytes, record: dict[str, Any]) -> bytes:
    """Return the chain hash of one step ``record`` following the chain value ``previous``.

    ``record`` is the step's stored fields that matter for integrity (kind, label, times,
    thread, task, frame hashes, extra, errors); see ``store.writer.StepRecord.chain_fields``.
    """
    h = hashlib.blake2b(previous, digest_size=DIGEST_SIZE)
    h.update(canonical_json(record))
    return h.digest()
