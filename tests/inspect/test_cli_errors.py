"""Bad input to the ``snapstate`` command: one line on stderr, exit code 2, file untouched."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

import snapstate_capture as snap
from snapstate_capture.store.sqlite.schema import FORMAT_VERSION
from tests.conftest import run_cli


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _recorded(path):
    with snap.record(path, name="ok"):
        value = 1
        snap.checkpoint("a")
    assert value
    return path


def _case(tmp_path, kind):
    path = tmp_path / f"{kind}.snap"
    if kind == "missing":
        return path, "no such file"
    if kind == "directory":
        path.mkdir()
        return path, "is a directory"
    if kind == "empty":
        path.write_bytes(b"")
        return path, "empty file"
    if kind == "not-sqlite":
        path.write_text("hello, I am a text file\n")
        return path, "not a SnapState timeline"
    if kind == "other-sqlite":
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
        return path, "not a SnapState timeline"
    if kind == "truncated":
        _recorded(path)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return path, str(path)
    if kind == "newer":
        _recorded(path)
        conn = sqlite3.connect(path)
        conn.execute(f"PRAGMA user_version={FORMAT_VERSION + 1}")
        conn.commit()
        conn.close()
        return path, "newer SnapState"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "not-sqlite", "other-sqlite",
                                  "truncated", "newer"])
@pytest.mark.parametrize("command", [["ls"], ["show"], ["show", "--json"]])
def test_bad_files_give_one_clean_line(tmp_path, kind, command):
    path, expected = _case(tmp_path, kind)
    before = _digest(path) if path.is_file() else None
    result = run_cli(*command, str(path))
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0] and expected in lines[0]
    assert "Traceback" not in result.stderr
    if before is not None:
        assert _digest(path) == before


def test_unknown_run_and_step_out_of_range(tmp_path):
    path = _recorded(tmp_path / "ok.snap")
    before = _digest(path)
    for args, expected in ((["show", str(path), "--run", "ffff"], "no run with id"),
                           (["show", str(path), "--step", "7"], "out of range"),
                           (["show", str(path), "--step", "-9"], "out of range"),
                           (["inspect", str(path), "--step", "7"], "out of range"),
                           (["inspect", str(path), "--run", "ffff"], "no run with id")):
        result = run_cli(*args)
        assert result.returncode == 2
        assert expected in result.stderr and str(path) in result.stderr
        assert "Traceback" not in result.stderr
    assert _digest(path) == before


def test_a_malformed_argument_is_one_line_naming_the_command_and_its_help(tmp_path):
    path = _recorded(tmp_path / "ok.snap")
    for args, expected in ((["replay", str(path), "--to", "abc"], "invalid int value: 'abc'"),
                           (["show", str(path), "--step", "1.5"], "invalid int value: '1.5'"),
                           (["gc", str(path), "--older-than", "-7d"], "expected one argument"),
                           (["ls"], "required: FILE")):
        result = run_cli(*args)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith(f"snapstate {args[0]}: ") and expected in lines[0]
        assert lines[0].endswith(f"(see snapstate {args[0]} --help)")


def test_a_url_of_another_kind_is_refused_not_taken_for_a_path(tmp_path):
    path = _recorded(tmp_path / "ok.snap")
    url = "sqlite:///" + str(tmp_path / "other.snap")
    program = tmp_path / "prog.py"
    program.write_text("print('ran')\n")
    for args in (["push", str(path), url], ["ls", url], ["record", "-o", url, str(program)]):
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == 2 and "ran" not in result.stdout
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"snapstate: {url}: "), result.stderr
        assert "postgresql://" in lines[0]
    assert not any(p.name.startswith("sqlite") for p in tmp_path.rglob("*"))


def test_ls_and_show_json(tmp_path):
    import json

    path = _recorded(tmp_path / "ok.snap")
    listing = json.loads(run_cli("ls", str(path), "--json").stdout)
    assert [r["name"] for r in listing["runs"]] == ["ok"]
    assert listing["runs"][0]["status"] == "finished"
    assert listing["runs"][0]["steps"] == 1
    shown = json.loads(run_cli("show", str(path), "--json").stdout)
    assert shown["run"]["name"] == "ok"
    assert shown["step"]["index"] == 0
    assert shown["step"]["kind"] == "checkpoint"
    assert shown["step"]["label"] == "a"
    frame = shown["step"]["frames"][-1]
    assert frame["function"] == "_recorded"
    assert frame["locals"]["value"] == {**frame["locals"]["value"], "type": "builtins.int",
                                        "repr": "1", "placeholder": None}
    human = run_cli("show", str(path))
    assert human.returncode == 0
    assert "checkpoint" in human.stdout and "_recorded" in human.stdout
    # piped: each line ends where its text does (Rich pads a table's rows to its widest)
    assert not [line for line in human.stdout.splitlines() if line.endswith(" ")]
