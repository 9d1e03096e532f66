"""Opening a PostgreSQL store: psycopg, the store's schema (created on first use), its version."""

from __future__ import annotations

from typing import Any

from ...errors import TimelineError
from .schema import DDL, SCHEMA_NAME, STORE_VERSION


def redacted(url: str) -> str:
    """``url`` without its password (locations are printed in messages)."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    return f"{scheme}{sep}{credentials.split(':', 1)[0]}:***@{host}"


def driver() -> Any:
    """The ``psycopg`` module; ``TimelineError`` when it is not installed."""
    try:
        import psycopg
    except ImportError:
        raise TimelineError("postgresql://", "a PostgreSQL store needs psycopg: "
                            "pip install 'snapstate[postgres]'") from None
    return psycopg


def errors() -> tuple[type[BaseException], ...]:
    """The driver's exceptions an engine turns into ``TimelineError``."""
    return (driver().Error,)


def connect(url: str, *, create: bool) -> Any:
    """A connection to the store at ``url`` with its schema on the search path.

    ``create``: make the schema when it is missing (writers; ``snapstate store init``).
    Raises ``TimelineError`` naming the (redacted) URL when the database cannot be reached,
    holds no store (and ``create`` is False), or holds a newer store version.
    """
    psycopg = driver()
    where = redacted(url)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise TimelineError(where, f"cannot connect ({_first_line(exc)})") from None
    try:
        present = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname=%s",
                               (SCHEMA_NAME,)).fetchone()
        if present is None or create:
            if present is None and not create:
                raise TimelineError(where, "holds no SnapState store (snapstate store init URL)")
            _create(conn, psycopg, first=present is None)
        conn.execute(f"SET search_path TO {SCHEMA_NAME}")
        row = conn.execute("SELECT value FROM meta WHERE key='version'").fetchone()
    except psycopg.Error as exc:
        conn.close()
        raise TimelineError(where, f"not a readable store ({_first_line(exc)})") from None
    version = int(row[0]) if row and str(row[0]).isdigit() else 0
    if version > STORE_VERSION:
        conn.close()
        raise TimelineError(where, f"written by a newer SnapState (store version {version}; "
                                   f"this one reads up to {STORE_VERSION}): upgrade snapstate")
    return conn


def _create(conn: Any, psycopg: Any, *, first: bool) -> None:
    """Run the (idempotent) DDL. Only the store's owner may: a writer or reader role
    (``roles``) is refused by the database, which is fine when the store is there already —
    then the store's own version check below decides."""
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('snapstate-schema'))")
            conn.execute(DDL)
    except psycopg.errors.InsufficientPrivilege:
        if first:
            raise
        # not the owner: the tables are the owner's to create and upgrade


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
