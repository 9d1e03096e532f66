"""Which engine a location names, and opening it: a path is a SQLite timeline file, a
``postgresql://`` URL a shared store (``store.engine`` is the contract both implement)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .engine import ReadEngine, WriteEngine


def is_store_url(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names a database store (``postgresql://…``) rather than a file."""
    text = os.fspath(location)
    return isinstance(text, str) and text.startswith(("postgresql://", "postgres://"))


def is_url(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` is written as a URL (``scheme://…``), a store's or any other."""
    text = os.fspath(location)
    return isinstance(text, str) and "://" in text


def check_location(location: str | os.PathLike[str]) -> None:
    """A location that looks like a URL of another kind (``sqlite:///x.snap``, ``s3://…``) is
    refused rather than taken for a relative path (a directory ``sqlite:`` was made for it)."""
    text = os.fspath(location)
    if is_url(text) and not is_store_url(text):
        from ..errors import TimelineError

        scheme = text.split("://", 1)[0]
        raise TimelineError(text, f"not a location snapstate knows ({scheme}:// URL): a "
                                  "timeline file is named by its path, a shared store by a "
                                  "postgresql:// URL")


def open_read_engine(location: str | os.PathLike[str]) -> ReadEngine:
    """Open ``location`` for reading with the engine it names.

    A path opens the SQLite file there; a ``postgresql://`` URL opens the PostgreSQL engine
    (``snapstate[postgres]``). Raises ``TimelineError`` naming the location when it cannot.
    """
    check_location(location)
    if is_store_url(location):
        from .postgres.engine import PostgresReadEngine

        return PostgresReadEngine(str(location))
    from .sqlite.reading import SQLiteReadEngine

    return SQLiteReadEngine(location)


def open_write_engine(location: str | os.PathLike[str]) -> WriteEngine:
    """Open ``location`` for writing with the engine it names (a file is created owner-only
    when missing). Raises ``TimelineError`` naming the location when it cannot."""
    check_location(location)
    if is_store_url(location):
        from .postgres.engine import PostgresWriteEngine

        return PostgresWriteEngine(str(location))
    from .sqlite.writing import SQLiteWriteEngine

    return SQLiteWriteEngine(location)


def location_label(location: str | os.PathLike[str]) -> Any:
    """How a location is named in messages and ``Timeline.path``: the ``Path`` of a file, the
    URL of a store without its password."""
    if is_store_url(location):
        from .postgres.connection import redacted

        return redacted(str(location))
    return Path(location)


def absolute_location(location: str | os.PathLike[str]) -> str:
    """``location`` as another process (a replay child) opens it from any directory: a file's
    absolute path, a store's URL unchanged (its password included: it is handed on, never
    printed)."""
    if is_store_url(location):
        return os.fspath(location)
    return str(Path(location).resolve())


def settle(location: str | os.PathLike[str]) -> None:
    """Once a command that may have had a fork written into ``location`` closed its own
    connection: fold what the writer could not, while the command still read the file, into
    the file itself (``sqlite.connection.fold_left_wal``), so the file is whole on its own.
    A store (``postgresql://``) has nothing to settle. Never raises."""
    if is_store_url(location):
        return
    from .sqlite.connection import fold_left_wal

    fold_left_wal(Path(location))
