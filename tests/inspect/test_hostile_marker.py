"""A hostile file whose payloads create a marker file when unpickled, opened through every
command that reads files: nothing is ever unpickled (DESIGN.md "Trust")."""

from __future__ import annotations

import json

import pytest

from snapstate_capture.trust import keys
from tests.conftest import run_cli
from tests.hostile import marker_file


@pytest.fixture
def hostile(tmp_path):
    marker = tmp_path / "pwned"
    return marker_file(tmp_path / "hostile.snap", marker), marker


COMMANDS = [["ls"], ["ls", "--json"], ["show"], ["show", "--json"], ["show", "--step", "0"],
            ["verify"], ["verify", "--json"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_commands_never_unpickle_an_unsigned_file(hostile, command):
    path, marker = hostile
    result = run_cli(*command, str(path))
    assert result.returncode == 0, result.stderr
    assert not marker.exists()


def test_show_and_verify_with_the_users_key_still_never_unpickle(hostile):
    path, marker = hostile
    keys.generate_key()  # a key that did not sign the file
    shown = json.loads(run_cli("show", "--json", str(path)).stdout)
    values = shown["step"]["frames"][-1]["locals"]
    assert values["bomb"]["has_payload"] and values["bomb"]["repr"] == "Touch()"
    verified = run_cli("verify", str(path))
    assert verified.returncode == 0 and "signed by another key" in verified.stdout
    assert not marker.exists()
