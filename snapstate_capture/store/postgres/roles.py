"""The store's two roles: a read-only **reader** for reviewers and a **writer** for agents.

The store never needs a superuser. Its schema belongs to the role that created it — the owner,
which needs only ``CREATE`` on the database (``snapstate store init URL``, or a first record);
the owner then grants the others what they need (``snapstate store grant URL --reader R
--writer W``, which runs ``grant_statements``):

- reader: ``USAGE`` on the schema, ``SELECT`` on its tables — ``ls``, ``show``, ``diff``,
  ``verify``, ``pull`` and the inspector; every write is refused by the database;
- writer: the reader's rights, ``INSERT`` and ``UPDATE`` on the tables and ``USAGE`` of the run
  sequence — ``record``, ``push``; no ``DELETE`` (``gc`` is the owner's), no DDL.

Both also get the same rights on tables a later version of the store adds (``ALTER DEFAULT
PRIVILEGES`` for the owner's future objects in the schema). The roles themselves are made by
whoever administers the database (``CREATE ROLE reviewer LOGIN``): SnapState grants, it never
creates roles.
"""

from __future__ import annotations

from typing import Any

from ...errors import TimelineError
from .connection import connect, driver, redacted
from .schema import SCHEMA_NAME

#: Table rights of each kind of role.
RIGHTS = {"reader": "SELECT", "writer": "SELECT, INSERT, UPDATE"}


def grant_statements(kind: str, role: str) -> list[Any]:
    """The ``GRANT`` statements (``psycopg.sql`` objects) that give ``role`` the rights of a
    ``kind`` ("reader" or "writer") on the store; raises ``ValueError`` for another kind."""
    if kind not in RIGHTS:
        raise ValueError(f"unknown role kind {kind!r} (reader, writer)")
    sql = driver().sql
    schema, who = sql.Identifier(SCHEMA_NAME), sql.Identifier(role)
    rights = sql.SQL(RIGHTS[kind])
    out = [sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, who),
           sql.SQL("GRANT {} ON ALL TABLES IN SCHEMA {} TO {}").format(rights, schema, who),
           sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT {} ON TABLES TO {}").format(
               schema, rights, who)]
    if kind == "writer":
        out += [sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA {} TO {}").format(schema, who),
                sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT USAGE ON SEQUENCES"
                        " TO {}").format(schema, who)]
    return out


def grant(url: str, kind: str, role: str) -> None:
    """Give ``role`` the rights of a ``kind`` on the store at ``url``, connected as its owner
    (the store is created first if missing). Raises ``TimelineError`` naming the URL when the
    role does not exist or the connected role may not grant (not the owner)."""
    psycopg = driver()
    conn = connect(url, create=True)
    try:
        with conn.transaction():
            for statement in grant_statements(kind, role):
                conn.execute(statement)
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise TimelineError(redacted(url), f"cannot grant {kind} rights to {role} ({first}); "
                            "connect as the store's owner, and create the role first "
                            f"(CREATE ROLE {role} LOGIN)") from None
    finally:
        conn.close()

