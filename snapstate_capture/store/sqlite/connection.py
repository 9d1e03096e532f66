"""Opening a timeline file's SQLite database, for writing and for reading.

Writers create the file owner-only (0600) and use WAL so readers can follow a live recording;
each step is its own transaction with ``synchronous=NORMAL``: a killed process (SIGKILL,
``os._exit``) loses at most the step in flight, because SQLite replays the WAL on the next open.
Readers open ``mode=ro`` and never write to the input file.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from ...errors import TimelineError
from .schema import APPLICATION_ID, FORMAT_VERSION, SCHEMA

SQLITE_MAGIC = b"SQLite format 3\x00"
#: What SQLite raises on a damaged file. Python's sqlite3 raises UnicodeDecodeError instead when
#: SQLite's own message quotes non-UTF-8 bytes from a corrupt schema (``db_error_text``).
DB_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)


def db_error_text(exc: BaseException) -> str:
    """SQLite's message for ``exc`` (one of ``DB_ERRORS``), undecodable bytes replaced."""
    if isinstance(exc, UnicodeDecodeError) and isinstance(exc.object, bytes):
        return exc.object.decode("utf-8", "replace")
    return str(exc)
#: Page size of new files. ``blobs`` is a WITHOUT ROWID table, whose rows spill into overflow
#: pages beyond about a quarter of a page: with 8 kB pages W2's 2.1 kB chunks of its 5 MB list
#: each wasted most of an 8 kB page (9.1 MB file); with 16 kB pages W2 is 2.5 MB and W1 1.43 MB
#: (measured; docs/storage.md). Empty tables cost a page each, so a tiny file is ~150 kB.
PAGE_SIZE = 16384


def open_for_writing(path: Path) -> sqlite3.Connection:
    """Open or create the timeline at ``path`` for appending; raises ``TimelineError``."""
    path = Path(path)
    if path.exists():
        check_readable(path)
    else:
        make_dirs_private(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
    deadline = time.monotonic() + LOCKED_RETRY_SECONDS
    while True:
        try:
            return _open_for_writing(path)
        except sqlite3.OperationalError as exc:
            # Switching a rollback-journal file to WAL needs the file to itself for a moment,
            # and SQLite answers "locked" at once, without waiting, when another process is
            # opening or closing it (two resumers starting together): wait and try again.
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise TimelineError(path, f"cannot write timeline ({db_error_text(exc)})") \
                    from None
            time.sleep(0.02)
        except DB_ERRORS as exc:
            raise TimelineError(path, f"cannot write timeline ({db_error_text(exc)})") from None


#: How long ``open_for_writing`` retries while another process holds the file locked.
LOCKED_RETRY_SECONDS = 30.0


def _open_for_writing(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False,
                           timeout=30.0)
    try:
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # takes effect only on a new file
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            conn.executescript(
                f"BEGIN IMMEDIATE; {SCHEMA} PRAGMA application_id={APPLICATION_ID};"
                f" PRAGMA user_version={FORMAT_VERSION}; COMMIT;")
        else:
            _check_version(path, version)
            if version < FORMAT_VERSION:  # additive upgrade: new tables only
                conn.executescript(f"BEGIN IMMEDIATE; {SCHEMA}"
                                   f" PRAGMA user_version={FORMAT_VERSION}; COMMIT;")
        return conn
    except BaseException:
        conn.close()
        raise


def make_dirs_private(directory: Path) -> None:
    """Create ``directory`` and every missing parent owner-only (0700); existing directories
    are left as they are (``Path.mkdir(parents=True)`` would give new parents default modes)."""
    missing = []
    for candidate in (directory, *directory.parents):
        if candidate.exists():
            break
        missing.append(candidate)
    for new in reversed(missing):
        new.mkdir(mode=0o700, exist_ok=True)


def check_readable(path: Path) -> None:
    """Raise ``TimelineError`` unless ``path`` looks like an SQLite file (without opening it)."""
    if not path.exists():
        raise TimelineError(path, "no such file")
    if path.is_dir():
        raise TimelineError(path, "is a directory, not a timeline file")
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise TimelineError(path, f"cannot read ({exc.strerror})") from None
    if not head:
        raise TimelineError(path, "empty file, not a timeline")
    if head != SQLITE_MAGIC:
        raise TimelineError(path, "not a SnapState timeline (not an SQLite database)")


def open_for_reading(path: Path) -> sqlite3.Connection:
    """Open the timeline at ``path`` read-only; raises ``TimelineError`` for anything wrong.

    Checks: exists, is a file, SQLite, ours (application id), a format version we read.
    """
    path = Path(path)
    check_readable(path)
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=30.0)
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except DB_ERRORS as exc:
        raise TimelineError(path, f"not a readable timeline ({db_error_text(exc)})") from None
    if app_id != APPLICATION_ID:
        conn.close()
        raise TimelineError(path, "not a SnapState timeline (an SQLite database of another kind)")
    _check_version(path, version)
    try:
        conn.execute("SELECT count(*) FROM runs").fetchone()
    except DB_ERRORS as exc:
        conn.close()
        raise TimelineError(path, f"damaged timeline ({db_error_text(exc)})") from None
    return conn


def _check_version(path: Path, version: int) -> None:
    if version > FORMAT_VERSION:
        raise TimelineError(
            path, f"written by a newer SnapState (format {version}; this one reads up to "
                  f"{FORMAT_VERSION}): upgrade snapstate")
    if version < 1:
        raise TimelineError(path, "not a SnapState timeline (no format version)")
