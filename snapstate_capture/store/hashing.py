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


#: ``canonical_json``'s encoder: SnapState's own instance, not ``json.dumps``, which a program
#: may patch while it is recorded (a test's ``mock.patch("json.dumps")`` counted every preview
#: and step capture among its calls). The same text ``json.dumps`` makes with these options.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=True)


def canonical_json(obj: Any) -> bytes:
    """Serialize JSON-able ``obj`` deterministically (sorted keys, no spaces, UTF-8)."""
    return _CANONICAL.encode(obj).encode("utf-8")


def chain_hash(previous: bytes, record: dict[str, Any]) -> bytes:
    """Return the chain hash of one step ``record`` following the chain value ``previous``.

    ``record`` is the step's stored fields that matter for integrity (kind, label, times,
    thread, task, frame hashes, extra, errors); see ``store.step_record.StepRecord.chain_fields``.
    """
    h = hashlib.blake2b(previous, digest_size=DIGEST_SIZE)
    h.update(canonical_json(record))
    return h.digest()
