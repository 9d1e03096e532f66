"""A throwaway PostgreSQL server for the store tests: ``initdb`` and ``pg_ctl`` on a temporary
directory, listening on a Unix socket only (no TCP port is opened).

The server refuses to run as root, so as root it runs as the ``postgres`` system user (the
machine image's PostgreSQL 15 binaries; ``.ci/run`` installs the ``postgresql`` package when
``initdb`` is missing). ``PgServer.url(db)`` is a ``postgresql://`` URL SnapState takes.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

_SEARCH = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin",
           "/usr/lib/postgresql/17/bin")


def find_binary(name: str) -> str | None:
    """Where ``initdb``/``pg_ctl`` are: PATH first, then Debian's versioned directories."""
    found = shutil.which(name)
    if found:
        return found
    for directory in _SEARCH:
        candidate = Path(directory) / name
        if candidate.exists():
            return str(candidate)
    return None


class PgServer:
    """One server: ``start()``, ``url(database)``, ``restart()``, ``stop()``."""

    def __init__(self) -> None:
        initdb, pg_ctl = find_binary("initdb"), find_binary("pg_ctl")
        if not initdb or not pg_ctl:
            raise RuntimeError("PostgreSQL's initdb/pg_ctl are not installed "
                               "(apt-get install postgresql)")
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.root = Path(tempfile.mkdtemp(prefix="snapstate-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "socket"
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name

    def _as_server_user(self, *argv: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else list(argv)

    def start(self) -> PgServer:
        self.socket_dir.mkdir()
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            for path in (self.root, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        subprocess.run(self._as_server_user(self.initdb, "-D", str(self.data), "-A", "trust",
                                            "-U", self.user, "--no-sync", "-E", "UTF8"),
                       check=True, capture_output=True, timeout=120)
        self._ctl("start")
        return self

    def _ctl(self, action: str) -> None:
        options = (f"-c listen_addresses='' -k {self.socket_dir} -c fsync=off"
                   " -c max_connections=200")
        subprocess.run(self._as_server_user(self.pg_ctl, "-D", str(self.data), "-o", options,
                                            "-w", "-t", "60", "-l", str(self.root / "log"),
                                            action),
                       check=True, capture_output=True, timeout=120)

    def restart(self) -> None:
        """``pg_ctl restart``: every connection is dropped."""
        self._ctl("restart")

    def create_database(self, name: str) -> str:
        """Create database ``name``; return its URL."""
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def require_password(self, database: str, role: str, password: str) -> str:
        """Create login ``role`` with ``password``, make it own ``database``, and have the
        server ask it for its password there (a ``pg_hba.conf`` line for that database and
        role only, then a reload: every other connection stays trusted). Returns the URL with
        the password in it."""
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(psycopg.sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                psycopg.sql.Identifier(role), psycopg.sql.Literal(password)))
            conn.execute(psycopg.sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                psycopg.sql.Identifier(database), psycopg.sql.Identifier(role)))
            hba = self.data / "pg_hba.conf"
            hba.write_text(f"local {database} {role} scram-sha-256\n" + hba.read_text())
            conn.execute("SELECT pg_reload_conf()")
        wrong = f"postgresql://{role}:not-{password}@/{database}?host={self.socket_dir}"
        for _ in range(100):  # the server takes the new line for connections after the reload
            try:
                psycopg.connect(wrong).close()
            except psycopg.OperationalError:
                break
            time.sleep(0.05)
        return f"postgresql://{role}:{password}@/{database}?host={self.socket_dir}"

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}@/{database}?host={self.socket_dir}"

    def stop(self) -> None:
        try:
            self._ctl("stop")
        except (subprocess.SubprocessError, OSError):
            pass
        shutil.rmtree(self.root, ignore_errors=True)
