"""``snapstate inspect FILE`` / ``snapstate FILE``: a bad file or run gives one clean line."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli

from .test_cli_errors import _case


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "not-sqlite", "other-sqlite",
                                  "truncated", "newer"])
@pytest.mark.parametrize("command", [["inspect"], []])
def test_bad_files_never_reach_the_screen(tmp_path, kind, command):
    path, expected = _case(tmp_path, kind)
    result = run_cli(*command, str(path))
    assert result.returncode == 2, result.stdout[-500:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0] and expected in lines[0]
    assert "Traceback" not in result.stderr and "\x1b[" not in result.stdout


def test_unknown_run_and_bad_second_file(agent_file, tmp_path):
    result = run_cli("inspect", str(agent_file), "--run", "ffff")
    assert result.returncode == 2 and "no run with id" in result.stderr
    missing = tmp_path / "nope.snap"
    result = run_cli("inspect", str(agent_file), str(missing))
    assert result.returncode == 2 and str(missing) in result.stderr
    assert "no such file" in result.stderr and "Traceback" not in result.stderr
