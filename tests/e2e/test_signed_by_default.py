"""Signed by default: one's own runs replay and fork without --trust or keygen; a run recorded
before the key existed is refused with the exact command that makes it pass; ``snapstate sign``
signs only runs that verify."""

from __future__ import annotations

import os
import re
import shlex
import sqlite3

from snapstate_capture.store.processes import process_start_marker
from tests.hostile import reseal
from tests.conftest import run_cli
from tests.e2e.replay_helpers import record_agent, runs_json, side_lines
from tests.hostile import as_stranger, connect, flip_byte, payload_keys


def test_own_program_replays_and_forks_without_trust_or_keygen(tmp_path,
                                                              isolated_user_config):
    path, side, _ = record_agent(tmp_path, rounds=2)  # a fresh machine: no key yet
    assert (isolated_user_config / "snapstate" / "key").exists()
    before = side_lines(side)
    replayed = run_cli("replay", str(path))
    assert replayed.returncode == 0, replayed.stderr
    assert "no divergence" in replayed.stdout and side_lines(side) == before  # served
    forked = run_cli("replay", str(path), "--to", "3", "--live")
    assert forked.returncode == 0, forked.stderr
    runs = runs_json(path)
    assert len(runs) == 2 and runs[1]["parent"]["step"] == 3
    again = run_cli("replay", str(path), "--run", runs[1]["id"][:8])  # the fork is signed too
    assert "refusing" not in again.stderr


def test_run_from_before_the_key_is_refused_with_the_sign_command_that_fixes_it(
        tmp_path, no_key_can_be_made, monkeypatch):
    path, _, _ = record_agent(tmp_path, rounds=2)  # unsigned: no key could be made
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # now the home works
    assert run_cli("keygen").returncode == 0
    refused = run_cli("replay", str(path))
    assert refused.returncode == 2
    message = refused.stderr
    assert "was recorded before your key existed" in message and "--trust" in message
    command = re.search(r"`(snapstate sign [^`]+)`", message).group(1)
    run_id = runs_json(path)[0]["id"]
    assert command == f"snapstate sign {shlex.quote(str(path))} --run {run_id[:8]}"
    signed = run_cli(*shlex.split(command)[1:])
    assert signed.returncode == 0 and f"run {run_id[:8]} signed by your key" in signed.stdout
    assert run_cli("replay", str(path)).returncode == 0
    assert "already signed" in run_cli(*shlex.split(command)[1:]).stdout


def test_a_strangers_run_is_refused_by_replay_and_by_sign(tmp_path):
    with as_stranger(tmp_path):
        path, _, _ = record_agent(tmp_path, rounds=1)
    run_cli("keygen")
    refused = run_cli("replay", str(path))
    assert refused.returncode == 2 and "signed by another key" in refused.stderr
    assert "pass --trust" in refused.stderr
    sign = run_cli("sign", str(path))
    assert sign.returncode == 2 and "signed by another key" in sign.stderr
    assert "was not signed" in sign.stderr
    assert run_cli("replay", str(path), "--trust").returncode == 0


def test_a_strangers_run_with_no_key_of_your_own_yet_advises_trust_add_and_sign_makes_no_key(
        tmp_path, isolated_user_config):
    """With no key yet, a run someone else signed is not one `snapstate sign` can sign: the
    refusal gives the `trust add` way (or --trust), and `sign` refuses it before it would
    have made a key for nothing."""
    with as_stranger(tmp_path):
        path, _, _ = record_agent(tmp_path, rounds=1)
    key = isolated_user_config / "snapstate" / "key"
    refused = run_cli("replay", str(path))
    assert refused.returncode == 2 and "snapstate trust add NAME KEY" in refused.stderr
    assert "snapstate sign" not in refused.stderr and "pass --trust" in refused.stderr
    sign = run_cli("sign", str(path))
    assert sign.returncode == 2 and "was not signed" in sign.stderr
    assert "trust add" in sign.stderr and len(sign.stderr.strip().splitlines()) == 1
    assert not key.exists()


def test_sign_refuses_a_run_that_does_not_verify_and_writes_nothing(tmp_path,
                                                                    no_key_can_be_made,
                                                                    monkeypatch):
    path, _, _ = record_agent(tmp_path, rounds=1)
    flip_byte(path, payload_keys(path)[-1])
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    sign = run_cli("sign", str(path))
    assert sign.returncode == 2 and "does not verify" in sign.stderr
    assert "corrupt" in sign.stderr and "Traceback" not in sign.stderr
    conn = connect(path)
    assert conn.execute("SELECT signature FROM runs").fetchone()[0] is None
    conn.close()


def test_sign_refuses_a_live_run_and_signs_a_crashed_one(tmp_path, no_key_can_be_made,
                                                        monkeypatch):
    path, _, _ = record_agent(tmp_path, rounds=1)
    conn = sqlite3.connect(path)  # as a recorder still at work leaves it: this process
    conn.execute("UPDATE runs SET status='running', ended=NULL, pid=?, proc_start=?",
                 (os.getpid(), process_start_marker(os.getpid())))
    conn.commit()
    run_id = conn.execute("SELECT id FROM runs").fetchone()[0]
    reseal(path, run_id)  # the row as that recorder would have sealed it
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    sign = run_cli("sign", str(path))
    assert sign.returncode == 2 and "still being recorded" in sign.stderr
    conn.execute("UPDATE runs SET pid=?", (2 ** 22 + 17,))  # that recorder is gone: crashed
    conn.commit()
    conn.close()
    reseal(path, run_id)
    signed = run_cli("sign", str(path))
    assert signed.returncode == 0, signed.stderr
    assert "valid" in run_cli("verify", "--json", str(path)).stdout
