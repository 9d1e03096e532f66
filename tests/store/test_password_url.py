"""A store URL holding a password (a database that asks for one): commands that write to the
store open it with the password, and never print it."""

from __future__ import annotations

from snapstate_capture.store.writer import StepRecord, TimelineWriter
from tests.conftest import run_cli

PASSWORD = "s3cret-pw"


def test_sign_a_run_in_a_store_that_asks_for_a_password(pg_server):
    pg_server.create_database("with_password")
    url = pg_server.require_password("with_password", "alice", PASSWORD)
    writer = TimelineWriter(url)  # unsigned: as recorded before the user had a key
    run_id = writer.begin_run(name="agent", entry={}, env={})
    writer.append_step(run_id, StepRecord(
        kind="checkpoint", label="turn", wall=1.0, mono=1.0, thread="MainThread", task=None,
        function="loop", filename="agent.py", lineno=3, depth=0, frames=[]))
    writer.end_run(run_id, "finished")
    writer.close()
    signed = run_cli("sign", url, "--run", run_id[:8])
    assert signed.returncode == 0, signed.stderr
    assert f"run {run_id[:8]} signed by your key" in signed.stdout
    verified = run_cli("verify", url)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "signed by this key" in verified.stdout, verified.stdout
    for out in (signed, verified):
        assert PASSWORD not in out.stdout + out.stderr
