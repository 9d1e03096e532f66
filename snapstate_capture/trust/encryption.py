"""Encryption at rest: values' previews and payloads sealed with AES-256-GCM under the user key.

``record(..., encrypt=True)`` seals every preview and payload blob — locals, step values, an
effect's arguments and result — and keys each effect's argument digest (``Sealer.digest``); run
and step lists, frame records (function, file, line, variable *names*), source text, the effect
journal's names, sites and outcomes, and signatures stay readable (docs/security.md),
so a file without its key still lists runs and steps and shows values as **locked**. Needs the
optional extra ``snapstate[crypto]`` (the ``cryptography`` package, imported only here, only
when encrypting or decrypting).

How a sealed blob is marked: the value ref names the key it was sealed with,
``{"p": preview_hash, "b": payload_hash, "s": "pickle", "x": key_id}``, and the blob itself is
an envelope::

    b"SSE1" | flags (1 byte: 1 = zlib inside) | key id (8 bytes) | nonce (12) | AES-GCM(ct+tag)

with magic, flags and key id as associated data. Content addressing stays meaningful: the blob
key is the hash of the envelope, so every reader — with or without the key — checks it on every
read, ``snapstate verify`` checks it, and the step chain covers it. Dedup still works because
sealing is deterministic: the nonce is HMAC-SHA256(nonce key, plaintext) truncated to 96 bits
(the synthetic-IV idea of RFC 5297 / SIV), so equal values seal to equal envelopes and a nonce
repeats only for the very same plaintext. What that reveals — which values are equal to which —
is what dedup reveals anyway; without the key no hash of a plaintext is stored.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import weakref
import zlib
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ..errors import IntegrityError, SnapStateError
from ..store.hashing import content_hash
from .keys import KeyFileError, UserKey, find_key

if TYPE_CHECKING:
    from ..store.reader import Timeline, Value

MAGIC = b"SSE1"
_ZLIB = 1
_HEAD = len(MAGIC) + 1 + 8 + 12
#: A sealed blob never inflates beyond this (a hostile envelope cannot exhaust memory).
MAX_PLAIN = 1 << 31
_CACHE_ITEMS, _CACHE_MAX_BYTES = 4096, 64 * 1024


class LockedError(SnapStateError):
    """A value is encrypted and cannot be opened: no key, another key, no ``cryptography``
    package, or the envelope does not decrypt (``reason`` says which)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _aesgcm() -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise LockedError("encryption needs the 'cryptography' package: "
                          "pip install 'snapstate[crypto]'", "cryptography not installed") from None
    return AESGCM


def _subkey(key: UserKey, purpose: bytes) -> bytes:
    return hmac.new(key.encryption, purpose, hashlib.sha256).digest()


class Sealer:
    """Seals blobs under one ``UserKey`` (deterministic AES-256-GCM, see module docstring).

    Raises ``LockedError`` at construction when ``cryptography`` is not installed. Small
    envelopes are cached by plaintext hash, so an unchanged value is not re-encrypted at every
    step.
    """

    def __init__(self, key: UserKey) -> None:
        self.key_id = key.key_id
        self._tag = bytes.fromhex(self.key_id)[:8]
        self._cipher = _aesgcm()(_subkey(key, b"aes-256-gcm"))
        self._nonce_key = _subkey(key, b"nonce")
        self._digest_key = _subkey(key, b"digest")
        self._cache: OrderedDict[bytes, bytes] = OrderedDict()

    def digest(self, text: str) -> str:
        """``text`` (a digest of plaintext, e.g. an effect's argument digest) keyed under this
        key (``keyed_digest``): stored instead of it, so nobody without the key can confirm a
        guess of the arguments."""
        return keyed_digest(self._digest_key, text)

    def seal(self, plain: bytes) -> bytes:
        """Return the envelope of ``plain`` (same input, same output)."""
        small = len(plain) <= _CACHE_MAX_BYTES
        if small:
            known = content_hash(plain)
            cached = self._cache.get(known)
            if cached is not None:
                self._cache.move_to_end(known)
                return cached
        flags, body = 0, plain
        if len(plain) >= 64:
            packed = zlib.compress(plain, 1)
            if len(packed) < len(plain):
                flags, body = _ZLIB, packed
        head = MAGIC + bytes([flags]) + self._tag
        nonce = hmac.new(self._nonce_key, plain, hashlib.sha256).digest()[:12]
        envelope = head + nonce + self._cipher.encrypt(nonce, body, head)
        if small:
            self._cache[known] = envelope
            if len(self._cache) > _CACHE_ITEMS:
                self._cache.popitem(last=False)
        return envelope


def keyed_digest(digest_key: bytes, text: str) -> str:
    """HMAC-SHA256 of ``text`` under ``digest_key``, 32 hex digits (a stored digest's form)."""
    return hmac.new(digest_key, text.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def digest_key(key: UserKey) -> bytes:
    """The subkey ``Sealer.digest`` keys argument digests with (replay compares under it)."""
    return _subkey(key, b"digest")


def open_envelope(key: UserKey, envelope: bytes, *, limit: int = MAX_PLAIN) -> bytes:
    """Return the plaintext of ``envelope`` sealed under ``key``.

    Raises ``LockedError`` (reason ``"another key"`` / ``"cryptography not installed"`` /
    ``"does not decrypt"``) when it cannot be opened.
    """
    if len(envelope) < _HEAD + 16 or envelope[:4] != MAGIC:
        raise LockedError("not an encrypted value", "does not decrypt")
    head, nonce, body = envelope[:_HEAD - 12], envelope[_HEAD - 12:_HEAD], envelope[_HEAD:]
    if head[5:13] != bytes.fromhex(key.key_id)[:8]:
        raise LockedError(f"encrypted with key {head[5:13].hex()}, not yours", "another key")
    cipher = _aesgcm()(_subkey(key, b"aes-256-gcm"))
    from cryptography.exceptions import InvalidTag

    try:
        plain = cipher.decrypt(nonce, body, head)
    except InvalidTag:
        raise LockedError("encrypted value does not decrypt (altered?)", "does not decrypt") \
            from None
    if head[4] & _ZLIB:
        try:
            inflater = zlib.decompressobj()
            plain = inflater.decompress(plain, limit + 1)
        except zlib.error:
            raise LockedError("encrypted value is damaged", "does not decrypt") from None
        if len(plain) > limit:
            raise LockedError("encrypted value is too large", "does not decrypt")
    return plain


# -- reading sealed values ---------------------------------------------------------------------

_keys: weakref.WeakKeyDictionary[Timeline, tuple[UserKey | None, str | None]] = \
    weakref.WeakKeyDictionary()
_previews: weakref.WeakKeyDictionary[Timeline, OrderedDict[str, Any]] = \
    weakref.WeakKeyDictionary()


def timeline_key(timeline: Timeline) -> tuple[UserKey | None, str | None]:
    """The user key for reading ``timeline`` (looked up once per open file) and, when there is
    none, why (``"no key"`` or the key file's problem)."""
    found = _keys.get(timeline)
    if found is None:
        try:
            key = find_key()
            found = (key, None if key else "no key")
        except KeyFileError as exc:
            found = (None, str(exc))
        _keys[timeline] = found
    return found


def unseal_blob(timeline: Timeline, blob_key: str, key_id: str) -> bytes:
    """Read blob ``blob_key`` (hash-checked) and open it with the user's key.

    Raises ``LockedError`` when it cannot be opened, ``IntegrityError`` / ``NotFoundError``
    from the blob read.
    """
    key, why = timeline_key(timeline)
    if key is None:
        raise LockedError(f"encrypted with key {key_id[:16]}; {why}", "no key")
    return open_envelope(key, timeline.blob(blob_key))


def locked_preview(key_id: str, reason: str) -> dict[str, Any]:
    """The preview shown for a value that cannot be decrypted: ``"sealed": {key_id, reason}``
    marks it (``Value.is_sealed``)."""
    return {"type": "?", "repr": f"<locked: encrypted with key {key_id[:16]} ({reason})>",
            "sealed": {"key_id": key_id[:16], "reason": reason}}


def sealed_preview(value: Value) -> dict[str, Any]:
    """Return the preview of an encrypted ``value``: decrypted when the user's key opens it,
    else a locked preview. Raises ``IntegrityError`` for a blob that fails its hash check."""
    key_id = str(value.ref.get("x"))
    timeline = value.timeline
    cache = _previews.setdefault(timeline, OrderedDict())
    cached = cache.get(value.preview_key or "")
    if cached is not None:
        return cached
    try:
        data = json_loads(unseal_blob(timeline, value.preview_key or "", key_id))
    except LockedError as exc:
        return locked_preview(key_id, exc.reason)
    if not isinstance(data, dict):
        raise IntegrityError(timeline.path, f"preview of {value.name} is malformed")
    cache[value.preview_key or ""] = data
    if len(cache) > 4096:
        cache.popitem(last=False)
    return data


def json_loads(data: bytes) -> Any:
    """``json.loads`` that returns None for anything malformed (or too deeply nested)."""
    try:
        return json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
