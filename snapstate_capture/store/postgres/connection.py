"""Opening a PostgreSQL store: psycopg, the store's schema (created on first use), its version."""

from __future__ import annotations

from typing import Any

from ...errors import StoreRefused, StoreUnreachable, TimelineError
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
    Raises ``TimelineError`` naming the (redacted) URL when the database cannot be reached
    (``StoreUnreachable``: worth trying again), refuses the URL's credentials
    (``StoreRefused``: it will not pass on a retry), holds no store (and ``create`` is False),
    or holds a newer store version.
    """
    psycopg = driver()
    where = redacted(url)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        if refused(exc):
            raise StoreRefused(where, f"the server refused the connection ({_reason(exc)}): "
                                      "check the URL's user and password") from None
        raise StoreUnreachable(where, f"cannot connect ({_first_line(exc)})") from None
    try:
        present = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname=%s",
                               (SCHEMA_NAME,)).fetchone()
        if present is None and not create:
            raise TimelineError(where, "holds no SnapState store (snapstate store init URL)")
        row = _version_row(conn) if present is not None else None
        if row is None and not create:
            raise TimelineError(where, "holds no SnapState store (snapstate store init URL)")
        if create and (row is None or _version(row) < STORE_VERSION):
            # Only a missing or older store runs the DDL: ALTER TABLE locks the runs table,
            # which every recorder's writer would otherwise queue on at each (re)connection.
            _create(conn, psycopg, first=row is None)
            row = _version_row(conn)
        conn.execute(f"SET search_path TO {SCHEMA_NAME}")
    except psycopg.Error as exc:
        conn.close()
        failure = StoreUnreachable if isinstance(exc, psycopg.OperationalError) else TimelineError
        raise failure(where, f"not a readable store ({_first_line(exc)})") from None
    version = _version(row)
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


#: What PostgreSQL's server says (libpq's ``FATAL:`` text; psycopg gives connection errors no
#: SQLSTATE) when it refuses a connection's credentials (28P01, 28000): a retry gets the same
#: answer. A database or role that does not exist yet is not here: a store may be recorded
#: into before its database is made, and the spool keeps the run until it is (a server
#: starting up, shutting down or full answers ``FATAL:`` too, and is retried as well).
_REFUSALS = ("password authentication failed", "authentication failed",
             "no pg_hba.conf entry", "no password supplied")


def refused(exc: BaseException) -> bool:
    """Whether a connection error is the server refusing the URL for good (see ``_REFUSALS``),
    as opposed to the server being out of reach or busy."""
    text = str(exc)
    return any(words in text for words in _REFUSALS)


def _reason(exc: BaseException) -> str:
    """The server's own words after ``FATAL:`` (the socket path and libpq's preamble left out)."""
    text = _first_line(exc)
    return " ".join(text.rpartition("FATAL:")[2].split()) or text


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _version_row(conn: Any) -> Any:
    """The store's ``meta`` version row (None when the schema has no ``meta`` table yet)."""
    if conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA_NAME}.meta",)).fetchone()[0] is None:
        return None
    return conn.execute(f"SELECT value FROM {SCHEMA_NAME}.meta WHERE key='version'").fetchone()


def _version(row: Any) -> int:
    return int(row[0]) if row and str(row[0]).isdigit() else 0
