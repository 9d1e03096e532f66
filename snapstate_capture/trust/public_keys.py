"""Public-key signatures (Ed25519) so a team can check each other's runs without a shared secret.

HMAC (``signing``) proves a run to its own author only: checking it needs the secret. With the
``crypto`` extra (the ``cryptography`` package) installed, a user's runs are signed with an
Ed25519 key instead, derived from the same user key (HMAC-SHA256 of the secret with the label
``snapstate/ed25519/v1`` is the private key's 32-byte seed, so there is no second secret to
keep), and anyone holding the public key can check them: ``snapstate keys export`` prints it,
``snapstate trust add NAME KEY`` trusts it (``trust.trusted``).

The exported form is one token, ``snapstate-ed25519:KEYID:PUBLIC`` — the user's key id (the one
runs record) and the 32-byte public key in unpadded URL-safe base64 — so it pastes into a shell
or a chat message whole. Without ``cryptography`` nothing here is importable-dependent until
used: ``available()`` says whether it is installed, and signing stays HMAC.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from ..errors import SnapStateError
from .keys import UserKey

#: What an exported public key starts with.
PREFIX = "snapstate-ed25519"
#: Bytes of an Ed25519 signature.
SIGNATURE_BYTES = 64
_EXPORTED = re.compile(r"^snapstate-ed25519:([0-9a-f]{16}):([A-Za-z0-9_-]{43})$")


class PublicKeyError(SnapStateError):
    """A public key text that is not one ``snapstate keys export`` prints, or no
    ``cryptography`` to use one; the message says which and what to do."""


def available() -> bool:
    """Whether Ed25519 signing can be used (the ``cryptography`` package is installed)."""
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519  # noqa: F401
    except ImportError:
        return False
    return True


def _ed25519() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise PublicKeyError("public-key signatures need the cryptography package: "
                             "pip install 'snapstate[crypto]'") from None
    return ed25519


_private_cache: dict[bytes, Any] = {}


def private_key(key: UserKey) -> Any:
    """The Ed25519 private key derived from ``key`` (cached per key). Raises
    ``PublicKeyError`` without ``cryptography``."""
    found = _private_cache.get(key.secret)  # by secret: no derivation for a key seen before
    if found is None:
        seed = key._derive("ed25519")
        found = _private_cache[key.secret] = _ed25519().Ed25519PrivateKey.from_private_bytes(seed)
    return found


def public_bytes(key: UserKey) -> bytes:
    """The 32 raw bytes of ``key``'s Ed25519 public key."""
    from cryptography.hazmat.primitives import serialization

    return private_key(key).public_key().public_bytes(serialization.Encoding.Raw,
                                                      serialization.PublicFormat.Raw)


def export_text(key: UserKey) -> str:
    """``snapstate-ed25519:KEYID:PUBLIC``: what a teammate passes to ``snapstate trust add``."""
    encoded = base64.urlsafe_b64encode(public_bytes(key)).rstrip(b"=").decode("ascii")
    return f"{PREFIX}:{key.key_id}:{encoded}"


def parse_exported(text: str) -> tuple[str, bytes]:
    """``(key id, 32-byte public key)`` of an exported key text (whitespace around it is
    ignored). Raises ``PublicKeyError`` naming what is wrong."""
    match = _EXPORTED.match(text.strip())
    if match is None:
        shown = text.strip()[:40]
        raise PublicKeyError(f"{shown!r} is not a public key from `snapstate keys export` "
                             f"(it looks like {PREFIX}:<16 hex digits>:<43 base64 characters>)")
    raw = base64.urlsafe_b64decode(match.group(2) + "=")
    return match.group(1), raw


def sign(key: UserKey, message: bytes) -> bytes:
    """The Ed25519 signature (64 bytes) of ``message`` under ``key``'s derived private key."""
    return private_key(key).sign(message)


def check(public: bytes, signature: bytes, message: bytes) -> bool:
    """Whether ``signature`` is the Ed25519 signature of ``message`` under ``public``; False
    (never an exception) for anything malformed. Raises ``PublicKeyError`` without
    ``cryptography``."""
    ed25519 = _ed25519()
    from cryptography.exceptions import InvalidSignature

    try:
        ed25519.Ed25519PublicKey.from_public_bytes(bytes(public)).verify(bytes(signature),
                                                                         message)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True
