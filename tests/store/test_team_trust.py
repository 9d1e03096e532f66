"""Teams and trust on one shared store (a real PostgreSQL), two users with their own keys:
B's run is refused for A with a message saying how to trust it; A trusts B's exported public
key (Ed25519) and then B's payloads load without --trust and verify as "signed by" B."""

from __future__ import annotations

import os
import stat
import time

import pytest

from ..conftest import run_cli, run_python

RECORD = """
import sys
import snapstate_capture as snap
with snap.record(sys.argv[1], name=sys.argv[2]):
    memory = {"facts": ["the sky is blue", "water is wet"], "turns": 2}
    snap.checkpoint("learned")
"""

LOAD = """
import sys
import snapstate_capture as snap
from snapstate_capture.errors import UntrustedPayloadError
with snap.open_timeline(sys.argv[1]) as timeline:
    run = timeline.run(sys.argv[2])
    value = run.steps[-1].frames[-1].locals["memory"]
    try:
        print("LOADED", value.load()["facts"][0])
    except UntrustedPayloadError as exc:
        print(exc)
        sys.exit(3)
"""


def _user(tmp_path, name: str) -> dict[str, str]:
    home = tmp_path / name
    home.mkdir()
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "SNAPSTATE_KEY": str(home / "keys" / "key"), "USER": name, "LOGNAME": name}


@pytest.fixture
def team_store(pg_server):
    return pg_server.create_database(f"team_{time.monotonic_ns()}")


def _record(url: str, env: dict[str, str], name: str) -> str:
    done = run_python("-c", RECORD, url, name, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    listed = run_cli("ls", url, "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    import json

    return next(r["id"] for r in json.loads(listed.stdout)["runs"] if r["name"] == name)


def test_a_teammates_run_loads_once_their_exported_key_is_trusted(team_store, tmp_path):
    ana, bo = _user(tmp_path, "ana"), _user(tmp_path, "bo")
    assert run_cli("keygen", env=ana).returncode == 0
    own = _record(team_store, ana, "ana-agent")
    theirs = _record(team_store, bo, "bo-agent")  # bo's key is made by his first record

    assert run_python("-c", LOAD, team_store, own, env=ana).stdout.startswith("LOADED")
    refused = run_python("-c", LOAD, team_store, theirs, env=ana)
    assert refused.returncode == 3, refused.stderr
    message = refused.stdout
    assert "refusing to load 'memory'" in message and "its run is signed by another key" in message
    assert "`snapstate keys export`" in message and "`snapstate trust add NAME KEY`" in message
    assert "--trust" in message

    exported = run_cli("keys", "export", env=bo)
    assert exported.returncode == 0, exported.stderr
    key = exported.stdout.strip()
    assert key.startswith("snapstate-ed25519:") and "\n" not in key
    added = run_cli("trust", "add", "bo", key, env=ana)
    assert added.returncode == 0, added.stderr
    trusted_file = tmp_path / "ana" / "keys" / "trusted_keys"  # beside ana's key
    assert stat.S_IMODE(os.stat(trusted_file).st_mode) == 0o600

    loaded = run_python("-c", LOAD, team_store, theirs, env=ana)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert loaded.stdout.strip() == "LOADED the sky is blue"
    verified = run_cli("verify", team_store, env=ana)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    line = next(x for x in verified.stdout.splitlines() if theirs[:8] in x)
    assert "signed by bo" in line
    assert "signed by this key" in next(x for x in verified.stdout.splitlines() if own[:8] in x)
    listed = run_cli("trust", "list", env=ana)
    assert listed.stdout.startswith("bo ") and key in listed.stdout

    # bo does not trust ana: trust goes one way
    assert run_python("-c", LOAD, team_store, own, env=bo).returncode == 3
    # removed: refused again
    assert run_cli("trust", "remove", "bo", env=ana).returncode == 0
    assert run_python("-c", LOAD, team_store, theirs, env=ana).returncode == 3


def test_bad_trust_input_is_one_clear_line(tmp_path):
    ana = _user(tmp_path, "ana")
    assert run_cli("keygen", env=ana).returncode == 0
    own_key = run_cli("keys", "export", env=ana).stdout.strip()
    for argv, words in ((("trust", "add", "bo", "not-a-key"), "is not a public key"),
                        (("trust", "add", "me", own_key), "is your own key"),
                        (("trust", "add", "b o", own_key), "not a usable name"),
                        (("trust", "remove", "nobody"), "no trusted key named 'nobody'"),
                        (("trust", "add", "bo"), "needs NAME and KEY")):
        done = run_cli(*argv, env=ana)
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert words in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
