"""Opening a timeline file's SQLite database, for writing and for reading.

Writers create the file owner-only (0600) and use WAL so readers can follow a live recording;
each step is its own transaction with ``synchronous=NORMAL``: a killed process (SIGKILL,
``os._exit``) loses at most the step in flight, because SQLite replays the WAL on the next open.
Readers open ``mode=ro`` and never write to the input file.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import shutil
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from ...clocks import Clocks
from ...errors import TimelineError
from .schema import APPLICATION_ID, FORMAT_VERSION, SCHEMA

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
    """Open or create the timeline at ``path`` for appending; raises ``TimelineError``.

    A new file appears whole (``create_file``): writers starting on a missing path at once all
    record into the one file that wins, and a file left empty or half-created (a 0-byte file,
    with or without a ``-journal``, from a recorder killed while creating it) is taken as new.
    """
    path = Path(path)
    if Path(f"{path}-journal").exists():
        _roll_back(path)
    for _ in range(3):
        if not _has_content(path):
            create_file(path)
        conn = _connect_for_writing(path)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0 and _is_unborn(conn):
                conn.close()
                create_file(path, replace_unborn=True)
                continue
            _check_version(path, version)
            if version < FORMAT_VERSION:
                upgrade(conn)
            return conn
        except DB_ERRORS as exc:
            conn.close()
            if _is_not_sqlite(exc):
                raise TimelineError(path, NOT_SQLITE) from None
            raise TimelineError(path, f"cannot write timeline ({db_error_text(exc)})") from None
        except BaseException:
            conn.close()
            raise
    raise TimelineError(path, "cannot write timeline (it keeps being replaced)")


#: How long opening for writing waits while another process holds the file locked (seconds).
LOCKED_RETRY_SECONDS = 30.0


def _connect_for_writing(path: Path) -> sqlite3.Connection:
    """A write connection in WAL mode; retries while another process switches the journal."""
    check_readable(path)
    deadline = Clocks.monotonic() + LOCKED_RETRY_SECONDS
    while True:
        try:
            conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False,
                                   timeout=30.0)
        except DB_ERRORS as exc:
            raise TimelineError(path, f"cannot write timeline ({db_error_text(exc)})") from None
        try:
            _writing_pragmas(conn)
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            # Leaving rollback-journal mode for WAL needs the file to itself for a moment;
            # SQLite answers "locked" at once while another process opens or closes it.
            if "locked" not in str(exc) or Clocks.monotonic() > deadline:
                raise TimelineError(path, f"cannot write timeline ({db_error_text(exc)})") \
                    from None
            time.sleep(0.02)
        except DB_ERRORS as exc:
            conn.close()
            if _is_not_sqlite(exc):
                raise TimelineError(path, NOT_SQLITE) from None
            raise TimelineError(path, f"cannot write timeline ({db_error_text(exc)})") from None


def _writing_pragmas(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # takes effect only on a new file
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring an older file to ``FORMAT_VERSION`` in one transaction (``schema``'s history):
    new tables; from format 4 the ``runs.seal`` column (runs already in the file keep their
    version-1 chain and no seal)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] < FORMAT_VERSION:
            for statement in _statements(SCHEMA):  # executescript would COMMIT first
                conn.execute(statement)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
            if "seal" not in columns:
                conn.execute("ALTER TABLE runs ADD COLUMN seal BLOB")
            conn.execute(f"PRAGMA user_version={FORMAT_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> Iterator[str]:
    """The SQL statements of ``script``, one at a time (comments may hold semicolons)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending
            pending = ""


def _roll_back(path: Path) -> None:
    """Let SQLite roll back a hot journal left beside ``path`` by a writer killed mid-change (a
    file killed inside its schema transaction may not even start with SQLite's header yet)."""
    try:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
        try:
            conn.execute("PRAGMA user_version").fetchone()
        finally:
            conn.close()
    except DB_ERRORS:
        pass  # not a database after all: the checks below say what it is


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except FileNotFoundError:
        return False
    except OSError:
        return True  # let the open say what is wrong


def _is_unborn(conn: sqlite3.Connection) -> bool:
    """True for a database with no format version, no application id and no tables: what a
    recorder killed before its schema committed leaves (nothing in it to lose)."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    return app_id in (0, APPLICATION_ID) and tables == 0


def create_file(path: Path, *, replace_unborn: bool = False) -> None:
    """Make ``path`` a new, empty timeline file in one step, unless another process did first.

    The database is built under a temporary name in the same directory (owner-only, schema and
    WAL mode committed) and renamed into place, so no reader or writer ever sees a file without
    its schema. Creators take turns by an exclusive ``flock`` on the directory, so two writers
    starting on a missing path make one file and both record into it. Under that lock, a
    temporary file left by a creator that was killed is removed, and so is an empty or
    half-created file at ``path`` (0 bytes, or no schema) with its stale ``-journal`` / ``-wal``
    / ``-shm`` companions, whose rollback would otherwise truncate the new file. Raises
    ``TimelineError`` when the directory or file cannot be written.
    """
    path = Path(path)
    try:
        make_dirs_private(path.parent)
        with _directory_lock(path.parent):
            if _has_content(path) and not (replace_unborn and _unborn_on_disk(path)):
                return  # another writer made it meanwhile (or it is not ours to replace)
            for stale in path.parent.glob(f".{glob.escape(path.name)}.*.new"):
                stale.unlink(missing_ok=True)
            temporary = path.parent / f".{path.name}.{uuid.uuid4().hex[:12]}.new"
            _build(temporary)
            for suffix in ("-journal", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            os.replace(temporary, path)
    except OSError as exc:
        raise TimelineError(path, f"cannot create timeline ({exc.strerror or exc})") from None
    except DB_ERRORS as exc:
        raise TimelineError(path, f"cannot create timeline ({db_error_text(exc)})") from None


def _unborn_on_disk(path: Path) -> bool:
    if not _has_content(path):
        return True
    try:  # (through SQLite only: see ``check_readable``; not SQLite raises, so not unborn)
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
        try:
            return conn.execute("PRAGMA user_version").fetchone()[0] == 0 and _is_unborn(conn)
        finally:
            conn.close()
    except (OSError, *DB_ERRORS):
        return False


def _build(temporary: Path) -> None:
    """Write a complete empty timeline (schema, format version, WAL mode) at ``temporary``."""
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    try:
        conn = sqlite3.connect(str(temporary), isolation_level=None, timeout=30.0)
        try:
            _writing_pragmas(conn)
            conn.executescript(
                f"BEGIN IMMEDIATE; {SCHEMA} PRAGMA application_id={APPLICATION_ID};"
                f" PRAGMA user_version={FORMAT_VERSION}; COMMIT;")
        finally:
            conn.close()  # the last connection folds the WAL in and removes -wal / -shm
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``directory`` (released on exit; SQLite's own locks are POSIX
    record locks on the files, which this does not touch). Where directories cannot be locked,
    creators do not take turns and the rename still keeps every file whole."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def close_file(conn: sqlite3.Connection, *, compact: Callable[[], bool] = lambda: False
               ) -> bool:
    """Fold the WAL into the main file and leave WAL mode, so the closed file opens read-only
    anywhere without ``-wal``/``-shm`` companions; when ``compact()`` says so, VACUUM first.

    Every step is one a SIGKILL can interrupt without leaving a file readers cannot open: the
    VACUUM runs in WAL mode (a kill leaves uncommitted WAL frames, which are ignored), and the
    file leaves WAL mode for ``MEMORY`` journaling, whose rollback journal never touches the
    disk — a switch to ``DELETE`` (or a VACUUM in it) killed midway leaves a hot journal that
    read-only readers cannot roll back. Leaving WAL needs the file to itself: while another
    connection uses it, the file stays in WAL mode, equally readable, and the last writer to
    close switches it. Returns True when the file left WAL mode. Does not close ``conn``.
    """
    try:
        conn.execute("PRAGMA busy_timeout=100")
        # checkpoints first; "locked" while shared (or the mode it stays in, unchanged)
        if conn.execute("PRAGMA journal_mode=MEMORY").fetchone()[0] != "memory":
            return False
        if compact():
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("PRAGMA journal_mode=MEMORY")
        return True
    except (sqlite3.Error, OSError):
        return False


def fold_left_wal(path: Path) -> bool:
    """Fold the ``-wal`` a writer left beside ``path`` because another connection had the
    file open when it closed (``close_file``): a fork's traced steps, written by the replay's
    writer while ``snapstate replay`` read the parent run, stayed in ``-wal`` and ``-shm``,
    and a ``cp`` of the file alone lost the fork. Opens the file for writing only when a
    ``-wal`` is there; while any other connection still uses it, leaves it as it is (equally
    readable). Returns True when no ``-wal`` is left. Never raises."""
    if not Path(f"{path}-wal").exists():
        return True
    if not path.is_file():
        return False  # (connecting would create an empty file)
    try:
        conn = sqlite3.connect(path, timeout=0.1, isolation_level=None)
    except (sqlite3.Error, OSError):
        return False
    try:
        return close_file(conn)
    finally:
        conn.close()


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
    """Raise ``TimelineError`` unless ``path`` is a non-empty file, from its directory entry
    alone. The file is never opened here: SQLite's locks are POSIX record locks, which a
    process drops on *every* descriptor of a file when it closes *any* one of them, so an
    ``open`` and ``close`` of the database beside this process's connections would let another
    process change the file under them (leave WAL mode, delete the ``-wal`` a live writer
    appends to: a resumed run's steps were lost so). Whether it is SQLite is SQLite's to say
    (``NOT_SQLITE``)."""
    try:
        if not path.exists():
            raise TimelineError(path, "no such file")
        if path.is_dir():
            raise TimelineError(path, "is a directory, not a timeline file")
        size = path.stat().st_size
    except OSError as exc:
        raise TimelineError(path, f"cannot read ({exc.strerror or exc})") from None
    if size == 0:
        raise TimelineError(path, "empty file, not a timeline")


#: What ``check_readable`` leaves to SQLite: a file that is not an SQLite database.
NOT_SQLITE = "not a SnapState timeline (not an SQLite database)"


def _is_not_sqlite(exc: BaseException) -> bool:
    """True when SQLite refused the file as no database of its own (its header)."""
    return isinstance(exc, sqlite3.DatabaseError) and "file is not a database" in str(exc)


def open_for_reading(path: Path) -> sqlite3.Connection:
    """Open the timeline at ``path`` read-only; raises ``TimelineError`` for anything wrong.

    Checks: exists, is a file, SQLite, ours (application id), a format version we read.
    """
    path = Path(path)
    check_readable(path)
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=30.0)
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc) or not Path(f"{path}-journal").exists():
                raise
            conn.close()  # a hot journal, which only a writer may roll back in place
            conn = _recovered_copy(path)
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except DB_ERRORS as exc:
        if _is_not_sqlite(exc):
            raise TimelineError(path, NOT_SQLITE) from None
        raise TimelineError(path, f"not a readable timeline ({db_error_text(exc)})") from None
    except OSError as exc:
        raise TimelineError(path, f"not a readable timeline (cannot recover its journal: "
                                  f"{exc.strerror or exc})") from None
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


def _recovered_copy(path: Path) -> sqlite3.Connection:
    """A read-only connection to a private copy of ``path`` whose hot journal was rolled back
    there: how a reader opens a file left with one by a writer killed mid-change (SnapState
    before format 4 could leave one while closing), without writing to it. The copy is removed
    at once; the open connection keeps reading it. Raises ``OSError``/``sqlite3.Error``."""
    directory = Path(tempfile.mkdtemp(prefix="snapstate-recover-"))  # owner-only
    try:
        copy = directory / "timeline.snap"
        shutil.copyfile(path, copy)
        shutil.copyfile(f"{path}-journal", f"{copy}-journal")
        writer = sqlite3.connect(str(copy), isolation_level=None)
        try:
            writer.execute("PRAGMA user_version").fetchone()  # rolls the journal back
        finally:
            writer.close()
        conn = sqlite3.connect(f"{copy.as_uri()}?mode=ro", uri=True, check_same_thread=False)
        conn.execute("PRAGMA schema_version").fetchone()
        return conn
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _check_version(path: Path, version: int) -> None:
    if version > FORMAT_VERSION:
        raise TimelineError(
            path, f"written by a newer SnapState (format {version}; this one reads up to "
                  f"{FORMAT_VERSION}): upgrade snapstate")
    if version < 1:
        raise TimelineError(path, "not a SnapState timeline (no format version)")
