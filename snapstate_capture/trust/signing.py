"""Run signatures: HMAC-SHA256 over a run's statement, everything that makes the run what it is.

A run's signature covers the same canonical statement its seal does (``store.sealing``): the
header (name, start time, pid/host, entry — how replay starts the program again! —, env,
parent, its place in the file), the key id itself, the step chain head (every column of every
step row, and every trace chunk, and through content hashes every frame record, preview,
payload and source), the effect journal and the run's end. The key id is inside what is
signed, so a signature cannot be passed off as another key's, and ``trust.verify`` treats a key
id without a valid signature as tampering. A sealed run's signature starts with a keyed tag of
the run id alone (``run_tag``), so a run this key signed is recognised as such however much of
it was edited: "signed by you, altered", never "signed by another key".

The writer re-seals and re-signs after every step, effect and the end, in the same transaction
as the row it covers, so a killed recorder leaves a run signed up to its last completed step
(DESIGN.md "Trust"). The HMAC key is the user key's signing subkey (``keys.UserKey.signing``);
RFC 2104 HMAC with SHA-256 from the stdlib.
"""

from __future__ import annotations

import hashlib
import hmac

from ..store.sealing import (RunState, effect_fields, end_fields, header_digest,  # noqa: F401
                             run_statement)
from .keys import UserKey

__all__ = ["RunSigner", "RunState", "check_signature", "effect_fields", "end_fields",
           "header_digest", "run_statement", "run_tag", "sign_state", "signed_by"]


#: Bytes of the run tag that starts a sealed run's signature (``run_tag``).
TAG_BYTES = 16


def sign_state(key: UserKey, state: RunState) -> bytes:
    """The signature of ``state`` under ``key``'s signing subkey: HMAC-SHA256 of
    ``run_statement(state)`` (32 bytes), preceded for sealed runs (statement version 2) by the
    run's tag (``run_tag``, 16 bytes)."""
    mac = hmac.new(key.signing, run_statement(state), hashlib.sha256).digest()
    return run_tag(key, state.run_id) + mac if state.version >= 2 else mac


def run_tag(key: UserKey, run_id: str) -> bytes:
    """A keyed tag of the run id alone (16 bytes of HMAC-SHA256): it stays valid whatever else
    of the run is edited, so ``verify`` can tell a run this key signed — and then altered,
    key id included — from a run signed by someone else."""
    return hmac.new(key.signing, b"snapstate run " + run_id.encode("ascii", "replace"),
                    hashlib.sha256).digest()[:TAG_BYTES]


def signed_by(key: UserKey, run_id: str, signature: object) -> bool:
    """True when ``signature`` starts with ``key``'s tag of ``run_id`` (``run_tag``)."""
    return (isinstance(signature, bytes) and len(signature) > TAG_BYTES
            and hmac.compare_digest(signature[:TAG_BYTES], run_tag(key, run_id)))


def check_signature(key: UserKey, state: RunState, signature: bytes) -> bool:
    """True when ``signature`` is ``state``'s signature under ``key`` (constant-time compare)."""
    return hmac.compare_digest(sign_state(key, state), bytes(signature))


class RunSigner:
    """Signs the run statements one ``TimelineWriter`` writes; ``RunSigner(None)`` signs nothing.

    The writer keeps each run's ``RunState`` (``store.sealing``) and asks for ``sign(state)``
    in the transaction of every change; ``check`` lets a writer continuing another writer's run
    (the trace writer process) make sure the run was not altered in between. Each call is one
    HMAC over ~400 bytes (a few µs).
    """

    def __init__(self, key: UserKey | None) -> None:
        self.key = key

    @property
    def key_id(self) -> str | None:
        """The id of the key runs are signed with (None: unsigned)."""
        return self.key.key_id if self.key else None

    def sign(self, state: RunState) -> bytes | None:
        """The signature of ``state`` (None when this signer has no key)."""
        return sign_state(self.key, state) if self.key is not None else None

    def check(self, state: RunState, signature: object) -> bool:
        """True when ``signature`` is this key's signature of ``state``."""
        return (self.key is not None and isinstance(signature, bytes)
                and check_signature(self.key, state, signature))
