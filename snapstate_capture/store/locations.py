"""Which engine a location names, and opening it: a path is a SQLite timeline file, a
``postgresql://`` URL a shared store (``store.engine`` is the contract both implement)."""

from __future__ import annotations

import os

from .engine import ReadEngine, WriteEngine


def is_store_url(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names a database store (``postgresql://…``) rather than a file."""
    text = os.fspath(location)
    return isinstance(text, str) and text.startswith(("postgresql://", "postgres://"))


def open_read_engine(location: str | os.PathLike[str]) -> ReadEngine:
    """Open ``location`` for reading with the engine it names.

    A path opens the SQLite file there; a ``postgresql://`` URL opens the PostgreSQL engine
    (``snapstate[postgres]``). Raises ``TimelineError`` naming the location when it cannot.
    """
    if is_store_url(location):
        from ..errors import TimelineError

        raise TimelineError(_redacted(str(location)),
                            "PostgreSQL stores are not supported by this SnapState yet")
    from .sqlite.reading import SQLiteReadEngine

    return SQLiteReadEngine(location)


def _redacted(url: str) -> str:
    """``url`` without its password (locations are printed in messages)."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    return f"{scheme}{sep}{credentials.split(':', 1)[0]}:***@{host}"


def open_write_engine(location: str | os.PathLike[str]) -> WriteEngine:
    """Open ``location`` for writing with the engine it names (a file is created owner-only
    when missing). Raises ``TimelineError`` naming the location when it cannot."""
    if is_store_url(location):
        from ..errors import TimelineError

        raise TimelineError(_redacted(str(location)),
                            "PostgreSQL stores are not supported by this SnapState yet")
    from .sqlite.writing import SQLiteWriteEngine

    return SQLiteWriteEngine(location)
