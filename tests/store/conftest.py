"""Store fixtures: every store test runs against both engines — a timeline file (SQLite) and a
real PostgreSQL server started for the test session (``pg_server.PgServer``)."""

from __future__ import annotations

import itertools
import os

import pytest

from ..inspect.conftest import pytest_pyfunc_call  # noqa: F401 - async (Pilot) tests here too
from .pg_server import PgServer

_databases = itertools.count()


@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL server per test process (Unix socket only), stopped at the end."""
    server = PgServer().start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request, tmp_path):
    """Where a test's timelines go: a fresh ``.snap`` file, or a fresh database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "store.snap")
    server = request.getfixturevalue("pg_server")
    return server.create_database(f"t{os.getpid()}_{next(_databases)}")
