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

With the ``crypto`` extra installed, a sealed run is signed with the user's Ed25519 key instead
(``public_keys``): the run tag, then the 64-byte Ed25519 signature of the same statement, so a
teammate holding the public key (``snapstate trust add``) can check it too. Both forms are
told apart by their length and both verify under the key that made them.
"""

from __future__ import annotations

import functools
import hashlib
import hmac

from ..store.sealing import (RunState, effect_fields, end_fields, header_digest,  # noqa: F401
                             run_statement)
from . import public_keys
from .keys import UserKey

__all__ = ["RunSigner", "RunState", "check_public_signature", "check_signature",
           "effect_fields", "end_fields", "header_digest", "is_public", "run_statement",
           "run_tag", "sign_state", "sign_state_public", "signed_by"]


#: Bytes of the run tag that starts a sealed run's signature (``run_tag``).
TAG_BYTES = 16
#: Bytes of an Ed25519-signed run's signature: the run tag, then the Ed25519 signature.
PUBLIC_SIGNATURE_BYTES = TAG_BYTES + public_keys.SIGNATURE_BYTES


def sign_state(key: UserKey, state: RunState, statement: bytes | None = None) -> bytes:
    """The signature of ``state`` under ``key``'s signing subkey: HMAC-SHA256 of
    ``run_statement(state)`` (32 bytes; ``statement`` when the caller made it already),
    preceded for sealed runs (statement version 2) by the run's tag (``run_tag``, 16 bytes)."""
    if statement is None:
        statement = run_statement(state)
    mac = hmac.new(key.signing, statement, hashlib.sha256).digest()
    return run_tag(key, state.run_id) + mac if state.version >= 2 else mac


def sign_state_public(key: UserKey, state: RunState, statement: bytes | None = None) -> bytes:
    """The Ed25519 signature of a sealed run's ``state`` (statement version 2): the run's tag
    (16 bytes) and the Ed25519 signature of ``run_statement(state)`` (64 bytes; ``statement``
    when the caller made it already). Raises ``public_keys.PublicKeyError`` without
    ``cryptography``."""
    if statement is None:
        statement = run_statement(state)
    return run_tag(key, state.run_id) + public_keys.sign(key, statement)


def is_public(signature: object) -> bool:
    """Whether ``signature`` has the Ed25519 form (``sign_state_public``)."""
    return isinstance(signature, bytes) and len(signature) == PUBLIC_SIGNATURE_BYTES


def check_public_signature(public: bytes, state: RunState, signature: object) -> bool:
    """True when ``signature`` is an Ed25519 signature of ``state`` under the public key
    ``public`` (a teammate's: their run tag is not checked, it needs their secret)."""
    return (is_public(signature) and state.version >= 2
            and public_keys.check(public, signature[TAG_BYTES:], run_statement(state)))


@functools.lru_cache(maxsize=1024)
def run_tag(key: UserKey, run_id: str) -> bytes:
    """A keyed tag of the run id alone (16 bytes of HMAC-SHA256): it stays valid whatever else
    of the run is edited, so ``verify`` can tell a run this key signed — and then altered,
    key id included — from a run signed by someone else. Kept for the last 1,024 runs: every
    change of a run is signed with it."""
    return hmac.new(key.signing, b"snapstate run " + run_id.encode("ascii", "replace"),
                    hashlib.sha256).digest()[:TAG_BYTES]


def signed_by(key: UserKey, run_id: str, signature: object) -> bool:
    """True when ``signature`` starts with ``key``'s tag of ``run_id`` (``run_tag``)."""
    return (isinstance(signature, bytes) and len(signature) > TAG_BYTES
            and hmac.compare_digest(signature[:TAG_BYTES], run_tag(key, run_id)))


def check_signature(key: UserKey, state: RunState, signature: bytes) -> bool:
    """True when ``signature`` is ``state``'s signature under ``key``: its HMAC form
    (constant-time compare) or its Ed25519 form (the run tag and the public-key signature)."""
    if is_public(signature) and state.version >= 2:
        return (hmac.compare_digest(signature[:TAG_BYTES], run_tag(key, state.run_id))
                and public_keys.available()
                and check_public_signature(public_keys.public_bytes(key), state, signature))
    return hmac.compare_digest(sign_state(key, state), bytes(signature))


class RunSigner:
    """Signs the run statements one ``TimelineWriter`` writes; ``RunSigner(None)`` signs nothing.

    The writer keeps each run's ``RunState`` (``store.sealing``) and asks for ``sign(state)``
    in the transaction of every change; ``check`` lets a writer continuing another writer's run
    (the trace writer process) make sure the run was not altered in between. Each call is one
    HMAC over ~400 bytes (a few µs), or one Ed25519 signature (some 50 µs) with ``public``.
    """

    def __init__(self, key: UserKey | None, *, public: bool | None = None) -> None:
        self.key = key
        #: Ed25519 signatures (``sign_state_public``) for sealed runs: by default whenever the
        #: ``crypto`` extra is installed, so teammates can check them; else HMAC.
        self.public = key is not None and (public_keys.available() if public is None
                                           else public)

    @property
    def key_id(self) -> str | None:
        """The id of the key runs are signed with (None: unsigned)."""
        return self.key.key_id if self.key else None

    def sign(self, state: RunState, statement: bytes | None = None) -> bytes | None:
        """The signature of ``state`` (None when this signer has no key); ``statement``:
        ``run_statement(state)``, when the caller has it (the writer seals the same bytes)."""
        if self.key is None:
            return None
        if self.public and state.version >= 2:
            return sign_state_public(self.key, state, statement)
        return sign_state(self.key, state, statement)

    def check(self, state: RunState, signature: object) -> bool:
        """True when ``signature`` is this key's signature of ``state``."""
        return (self.key is not None and isinstance(signature, bytes)
                and check_signature(self.key, state, signature))
