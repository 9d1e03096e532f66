"""Scrubbing secret text out of reprs: redaction that survives a parent's ``__repr__``.

Redacting a value under a secret name is not enough on its own: the ``repr`` of its parent
(a dataclass, a namedtuple, a placeholder's repr) is the parent's own code and prints the
secret again. So every string value found under a secret name — while building the preview
or walking the payload — is collected, and each occurrence of it in any text of the preview
(reprs, exception messages, heads) or of a placeholder is replaced by ``<redacted>``.
Strings shorter than ``MIN_SECRET_CHARS`` are not scrubbed (they would erase ordinary words).
"""

from __future__ import annotations

from typing import Any, Iterable

MIN_SECRET_CHARS = 4
REDACTED = "<redacted>"
_MAX_DEPTH = 4
_MAX_ITEMS = 200


def secret_texts(values: Iterable[Any]) -> list[str]:
    """The strings held by ``values`` (themselves, or inside builtin containers up to a few
    levels), longest first, each at least ``MIN_SECRET_CHARS`` long."""
    found: set[str] = set()
    for value in values:
        _collect(value, found, 0)
    return sorted(found, key=len, reverse=True)


def _collect(value: Any, found: set[str], depth: int) -> None:
    cls = type(value)
    if cls is str:
        if len(value) >= MIN_SECRET_CHARS:
            found.add(value)
    elif cls is bytes or cls is bytearray:
        if len(value) >= MIN_SECRET_CHARS:
            found.add(bytes(value).decode("utf-8", "replace"))
    elif depth < _MAX_DEPTH:
        if cls is dict:
            for item in list(value.values())[:_MAX_ITEMS]:
                _collect(item, found, depth + 1)
        elif cls in (list, tuple, set, frozenset):
            for item in list(value)[:_MAX_ITEMS]:
                _collect(item, found, depth + 1)


def scrub_text(text: str, texts: list[str]) -> str:
    """``text`` with every occurrence of each of ``texts`` (and its repr) replaced."""
    for secret in texts:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def scrub(node: Any, texts: list[str]) -> Any:
    """Return the JSON tree ``node`` with ``scrub_text`` applied to every string in it."""
    cls = type(node)
    if cls is str:
        return scrub_text(node, texts)
    if cls is dict:
        return {key: scrub(value, texts) for key, value in node.items()}
    if cls is list:
        return [scrub(value, texts) for value in node]
    return node
