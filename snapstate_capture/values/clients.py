"""HTTP and model-API clients as machinery: one short line, no payload, no per-step cost.

Nearly every agent holds a client — ``httpx.Client``, ``requests.Session``, ``aiohttp``'s
``ClientSession``, ``openai.OpenAI``, ``anthropic.Anthropic`` — for the whole run. As a value it
is a connection pool, an SSL context and locks: its pickle fails part-way (two placeholders and a
capture error at every step), so it was captured again at every step, ~0.6-0.9 ms each on the
CI machine (``bench/bench_unchanged_objects.py``), and what it showed was its memory. Registered
as framework machinery (``machinery.py``), a client is shown as ``<Client
base_url=https://api.example.com/v1>``: its base URL read statically, without its user
information, query or fragment (a key may sit there), and stored again only when that line
changes. The libraries' own subclasses are included (``openai.OpenAI`` is a ``BaseClient``); a
client class of the program's own is not (``CLIENT_PACKAGES``): it may hold state of its own,
and is captured as any object is.

Nothing here imports a client library: classes are registered by name.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from . import machinery
from .static import static_attributes

__all__ = ["CLIENT_CLASSES"]

#: Client base classes (``module.qualname`` as ``registry.class_name`` spells them).
CLIENT_CLASSES = (
    "httpx._client.BaseClient",          # httpx.Client, httpx.AsyncClient
    "requests.sessions.Session",
    "aiohttp.client.ClientSession",
    "openai._base_client.BaseClient",    # openai.OpenAI, AsyncOpenAI, AzureOpenAI
    "anthropic._base_client.BaseClient",  # anthropic.Anthropic, AsyncAnthropic
)

#: The libraries whose own client classes are machinery.
CLIENT_PACKAGES = frozenset({"httpx", "requests", "aiohttp", "openai", "anthropic"})
#: Attributes that hold a client's base URL, in the order they are looked for.
_URL_FIELDS = ("_base_url", "_configured_base_url", "base_url")


def describe(client: Any) -> str:
    """``base_url=…`` of ``client`` when one of ``_URL_FIELDS`` holds a URL, else ``""``;
    read statically (instance attributes, tuple fields), never a property or ``__str__``."""
    attributes = dict(static_attributes(client) or ())
    for name in _URL_FIELDS:
        url = url_text(attributes.get(name))
        if url:
            return f"base_url={url}"
    return ""


def url_text(url: Any) -> str:
    """``scheme://host[:port]/path`` of a URL held as a ``str``, an ``httpx.URL`` (its parsed
    ``_uri_reference`` tuple) or a ``yarl.URL`` (its ``_scheme``/``_netloc``/``_path``), without
    user information, query or fragment; ``""`` for anything else."""
    if url is None:
        return ""
    if isinstance(url, str):
        try:
            parts = urlsplit(url)
        except ValueError:
            return ""
        return _join(parts.scheme, parts.netloc, parts.path)
    attributes = dict(static_attributes(url) or ())
    reference = attributes.get("_uri_reference")
    if isinstance(reference, tuple) and getattr(type(reference), "_fields", None) and \
            reference._fields[:5] == ("scheme", "userinfo", "host", "port", "path"):
        scheme, _, host, port, path = tuple.__getitem__(reference, slice(0, 5))
        netloc = f"{host}:{port}" if port is not None else host
        return _join(scheme, netloc, path)
    scheme, netloc, path = (attributes.get(key) for key in ("_scheme", "_netloc", "_path"))
    if all(isinstance(part, str) for part in (scheme, netloc, path)):
        return _join(scheme, netloc, path)
    return ""


def _join(scheme: Any, netloc: Any, path: Any) -> str:
    if not (isinstance(scheme, str) and isinstance(netloc, str) and isinstance(path, str)):
        return ""
    host = netloc.rpartition("@")[2]  # user information (a password) never shown
    if not scheme or not host:
        return ""
    return f"{scheme}://{host}{path}"


machinery.register(CLIENT_CLASSES, describe, where=machinery.classes_of(CLIENT_PACKAGES))
