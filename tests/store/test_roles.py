"""The store's roles on a real PostgreSQL, none of them a superuser: an owner creates the store
and grants; the reader role (reviewers) can ls, show, diff and verify but every write is refused;
the writer role (agents) records."""

from __future__ import annotations

import itertools
import json
import os

import pytest

from ..conftest import run_cli

_names = itertools.count()

PROGRAM = """
import snapstate_capture as snap
plan = ["search", "answer"]
for i, item in enumerate(plan):
    snap.checkpoint(item, n=i)
print("program done")
"""


@pytest.fixture
def roles(pg_server):
    """A database, and three login roles: its store's owner (CREATE on the database only),
    a reviewer and an agent; their URLs."""
    import psycopg

    tag = f"{os.getpid()}_{next(_names)}"
    url = pg_server.create_database(f"roles_{tag}")
    names = {kind: f"{kind}_{tag}" for kind in ("owner", "reviewer", "agent")}
    with psycopg.connect(pg_server.url("postgres"), autocommit=True) as conn:
        for name in names.values():
            conn.execute(f'CREATE ROLE "{name}" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE')
        conn.execute(f'GRANT CREATE ON DATABASE "roles_{tag}" TO "{names["owner"]}"')
    database = url.split("@/", 1)[1]
    return {kind: f"postgresql://{name}@/{database}" for kind, name in names.items()} | {
        "names": names}


def test_the_reader_browses_and_verifies_but_cannot_write_and_the_writer_records(roles, tmp_path):
    owner, reviewer, agent = roles["owner"], roles["reviewer"], roles["agent"]
    names = roles["names"]
    done = run_cli("store", "init", owner)
    assert done.returncode == 0, done.stderr
    from snapstate_capture.store.postgres.connection import redacted

    assert done.stdout.strip() == f"{redacted(owner)}: store ready"  # the URL, no password
    done = run_cli("store", "grant", owner, "--reader", names["reviewer"],
                   "--writer", names["agent"])
    assert done.returncode == 0, done.stderr
    assert names["reviewer"] in done.stdout and names["agent"] in done.stdout

    program = tmp_path / "agent.py"
    program.write_text(PROGRAM)
    recorded = run_cli("record", "-o", agent, "--name", "triage", str(program), cwd=tmp_path)
    assert recorded.returncode == 0 and "program done" in recorded.stdout, recorded.stderr
    assert "permission denied" not in recorded.stderr

    listed = run_cli("ls", reviewer, "--json")
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)["runs"]
    assert [(r["name"], r["status"]) for r in runs] == [("triage", "finished")]
    shown = run_cli("show", reviewer)  # the last step, its locals
    assert shown.returncode == 0 and "'answer'" in shown.stdout, shown.stderr
    verified = run_cli("verify", reviewer)
    assert verified.returncode == 0 and "ok: nothing altered" in verified.stdout, verified.stderr
    diffed = run_cli("diff", reviewer, "--step", "0", reviewer, "--step", "-1")
    assert diffed.returncode == 1, diffed.stderr  # different steps: exit 1, not an error

    # the reader writes nothing: the program still runs, its run is not stored
    refused = run_cli("record", "-o", reviewer, "--name", "sneaky", str(program), cwd=tmp_path)
    assert refused.returncode == 0 and "program done" in refused.stdout
    assert "permission denied" in refused.stderr
    assert "open it with" not in refused.stderr  # nothing of it was stored
    file = tmp_path / "local.snap"
    assert run_cli("record", "-o", str(file), str(program), cwd=tmp_path).returncode == 0
    pushed = run_cli("push", str(file), reviewer)
    assert pushed.returncode == 2 and "permission denied" in pushed.stderr, pushed.stderr
    assert "Traceback" not in pushed.stderr
    assert "internal error" not in pushed.stderr and "nothing was copied" in pushed.stderr
    after = json.loads(run_cli("ls", reviewer, "--json").stdout)["runs"]
    assert [r["name"] for r in after] == ["triage"]

    # the writer cannot delete or change the schema: gc and DDL are the owner's
    import psycopg

    with psycopg.connect(agent, autocommit=True) as conn:
        for statement in ("DELETE FROM snapstate.runs", "DROP TABLE snapstate.steps",
                          "CREATE TABLE snapstate.extra (x int)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        flags = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                             " OR rolname = %s", (names["owner"],)).fetchall()
        assert flags == [(False,), (False,)]
        owner_of = conn.execute("SELECT nspowner::regrole::text FROM pg_namespace"
                                " WHERE nspname = 'snapstate'").fetchone()[0]
        assert owner_of.strip('"') == names["owner"]




def test_a_writer_on_a_store_not_upgraded_is_told_who_upgrades_it(roles, tmp_path):
    """A version-2 store (from before durable waits) has no leases table, and the writer role
    may not add one: resuming says so in one line naming the store and what to run."""
    import psycopg

    from snapstate_capture.store.postgres.roles import grant

    owner, agent, names = roles["owner"], roles["agent"], roles["names"]
    _crashed_run(owner, tmp_path)
    grant(owner, "writer", names["agent"])
    with psycopg.connect(owner, autocommit=True) as conn:  # the store as version 2 left it
        conn.execute("DROP TABLE snapstate.leases")
        conn.execute("UPDATE snapstate.meta SET value = '2' WHERE key = 'version'")
    resumed = run_cli("resume", agent)
    assert resumed.returncode == 2
    line = resumed.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, resumed.stderr
    assert line.startswith(f"snapstate: postgresql://{names['agent']}@/"), line
    assert "no leases table" in line and "snapstate store init URL" in line \
        and "owner" in line, line
    upgraded = run_cli("store", "init", owner)  # the owner upgrades it ...
    assert upgraded.returncode == 0, upgraded.stderr
    again = run_cli("resume", agent)  # ... and the writer gets further
    assert "no leases table" not in again.stderr, again.stderr


def _crashed_run(url: str, tmp_path) -> str:
    """A signed run whose recorder is gone (a crashed run, for ``resume``), written at ``url``."""
    import socket
    import subprocess
    import time

    from snapstate_capture.store.step_record import StepRecord
    from snapstate_capture.store.writer import TimelineWriter
    from snapstate_capture.trust.keys import find_key, generate_key
    from snapstate_capture.trust.signing import RunSigner

    script = tmp_path / "agent.py"
    script.write_text(PROGRAM)
    dead = subprocess.Popen(["true"])
    dead.wait()
    writer = TimelineWriter(url, signer=RunSigner(find_key() or generate_key()))
    run_id = writer.begin_run(
        name="agent", entry={"kind": "script", "path": str(script), "argv": []}, env={},
        facts={"started": time.time(), "pid": dead.pid, "host": socket.gethostname(),
               "proc_start": None})
    writer.append_step(run_id, StepRecord(
        kind="checkpoint", label="turn", wall=1.0, mono=1.0, thread="MainThread", task=None,
        function="loop", filename=str(script), lineno=3, depth=0, frames=[]))
    writer.close()
    return run_id
