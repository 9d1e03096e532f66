"""Credentials recognised by their shape, whatever name holds them (docs/security.md).

A secret stored under an ordinary name (``headers["X-Key"]``, ``line = f"Bearer {key}"``, an
element of a list) has no secret name to give it away, but the credentials most programs hold
have a recognisable form: provider prefixes (``sk-…``, ``ghp_…``, ``xoxb-…``), AWS access key
ids, JWTs, PEM private keys. ``find(text)`` returns the credentials in a string; capture
redacts each one (the rest of the string is kept) in previews, drops the string from payloads
and scrubs it from every other text of the value (``scrub.py``). Patterns need a long random
part, so ordinary words (``sk-learn``, ``ghp_``) do not match.
"""

from __future__ import annotations

import re

#: One alternative per credential kind (documented in docs/security.md).
PATTERNS: tuple[tuple[str, str], ...] = (
    ("OpenAI / Anthropic / generic sk- key", r"sk-(?:[A-Za-z]+-)*[A-Za-z0-9_-]{20,}"),
    ("Stripe secret or restricted key", r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("GitHub token", r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"),
    ("Slack token", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("AWS access key id", r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}"),
    ("Google API key", r"AIza[0-9A-Za-z_-]{35}"),
    ("JSON Web Token", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"),
    ("PEM private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
)
_SOURCE = "|".join(f"(?:{pattern})" for _, pattern in PATTERNS)
_TEXT = re.compile(rf"(?<![A-Za-z0-9_])(?:{_SOURCE})")
#: In a pickle a string follows its length byte, which may be a letter: no look-behind there
#: (a false alarm only sends the value down the careful path).
_BYTES = re.compile(_SOURCE.encode())


def find(text: str) -> list[str]:
    """The credentials in ``text`` (may be empty); never raises. About 1 µs for a string
    without any (a cheap test of the fixed parts first: every pattern holds one of them)."""
    if type(text) is not str or len(text) < 16:
        return []
    if not ("sk-" in text or "k_" in text or "_" in text and "gh" in text or "xox" in text
            or "AKIA" in text or "ASIA" in text or "eyJ" in text or "AIza" in text
            or "-----BEGIN" in text or "ABIA" in text or "ACCA" in text):
        return []
    return _TEXT.findall(text)


def holds(text: object) -> bool:
    """True when the str ``text`` holds a credential."""
    return bool(find(text))  # type: ignore[arg-type]


#: Every pattern holds one of these literals, and each literal holds its group's byte; a
#: one-byte search is a ``memchr``, so data without ``-``, ``_``, ``A`` and ``J`` (lower-case
#: prose, most pickles of it) is cleared in well under a microsecond per kilobyte, where the
#: alternation of ``_BYTES`` costs ~25 µs per kilobyte.
_LITERALS: tuple[tuple[bytes, tuple[bytes, ...]], ...] = (
    (b"-", (b"sk-", b"xox", b"-----BEGIN")),
    (b"_", (b"k_", b"gh", b"pat_")),  # [sr]k_…, gh[pousr]_…, github_pat_…
    (b"A", (b"AKIA", b"ASIA", b"ABIA", b"ACCA", b"AIza")),
    (b"J", (b"eyJ",)),
)


def in_bytes(data: bytes) -> bool:
    """True when the bytes ``data`` (a pickle, for instance) hold a credential's text. The
    regular expression runs only when one of the patterns' fixed parts is there."""
    for byte, literals in _LITERALS:
        if byte in data and any(literal in data for literal in literals):
            return _BYTES.search(data) is not None
    return False
