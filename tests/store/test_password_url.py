"""A store URL holding a password (a database that asks for one): commands that write to the
store open it with the password, and never print it."""

from __future__ import annotations

from snapstate_capture.store.step_record import StepRecord
from snapstate_capture.store.writer import TimelineWriter
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


def test_record_with_a_wrong_password_is_refused_before_the_program_runs(pg_server, tmp_path):
    """A password the server refuses will not pass on a retry: ``record`` says so in one line
    and exits 2 before the program starts, instead of spooling the run and waiting for a store
    that will never take it (and the password is not printed)."""
    pg_server.create_database("refusing")
    url = pg_server.require_password("refusing", "bob", PASSWORD)
    wrong = url.replace(f":{PASSWORD}@", ":not-the-password@")
    program = tmp_path / "agent.py"
    ran = tmp_path / "ran.txt"
    program.write_text(f"open({str(ran)!r}, 'w').write('ran')\n")
    refused = run_cli("record", "-o", wrong, str(program), cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert "refused the connection" in lines[0] and "password authentication failed" in lines[0]
    assert "not-the-password" not in refused.stderr and "Traceback" not in refused.stderr
    assert not ran.exists()  # the program never started
    right = run_cli("record", "-o", url, str(program), cwd=tmp_path)
    assert right.returncode == 0 and ran.exists(), right.stderr
    assert "open it with: snapstate inspect postgresql://bob:***@" in right.stderr
    assert PASSWORD not in right.stdout + right.stderr  # the report line names it redacted
