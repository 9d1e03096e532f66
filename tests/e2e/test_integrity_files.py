"""Creating and closing a timeline file with real processes: writers that start together on a
new path all record (none sees a file without its schema), a file left empty or half-created is
taken as new, and a recorder killed while closing leaves a file every reader opens."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import snapstate_capture as snap
from tests.conftest import PROGRAMS, ROOT, run_cli

PROGRAM = PROGRAMS / "integrity_program.py"


def start(path: Path, mode: str, steps: int, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(PROGRAM), str(path), mode, str(steps), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.parametrize("attempt", range(3))
def test_writers_starting_together_on_a_new_file_all_record(tmp_path, attempt):
    path, go = tmp_path / "fresh.snap", tmp_path / "go"
    children = [start(path, "checkpoint", 20, str(go)) for _ in range(6)]
    for child in children:
        assert child.stdout.readline().strip() == "ready"
    go.write_text("")
    outputs = [child.communicate(timeout=120) for child in children]
    for child, (out, err) in zip(children, outputs):
        assert child.returncode == 0, err
        assert "not recording" not in err, err
        assert out.count("step ") == 20
    with snap.open_timeline(path) as timeline:
        assert len(timeline.runs) == 6
        assert sorted(len(run.steps) for run in timeline.runs) == [20] * 6
        assert {run.status for run in timeline.runs} == {"finished"}
    assert not list(tmp_path.glob(".fresh.snap.*"))  # no temporary file left behind


def _half_created_with_hot_journal(path: Path) -> None:
    """What a recorder killed inside its schema transaction leaves (rollback journal mode)."""
    script = (
        "import os, signal, sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "conn.execute('PRAGMA journal_mode=DELETE')\n"
        "conn.execute('PRAGMA cache_size=1')\n"
        "conn.execute('BEGIN IMMEDIATE')\n"
        "conn.execute('CREATE TABLE filler (x)')\n"
        "conn.executemany('INSERT INTO filler VALUES (?)', [(os.urandom(900),)] * 400)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")
    subprocess.run([sys.executable, "-c", script, str(path)], check=False)


@pytest.mark.parametrize("left", ["empty", "empty+journal", "hot-journal-no-schema"])
def test_an_empty_or_half_created_file_is_taken_as_new(tmp_path, left):
    path = tmp_path / "left.snap"
    if left == "hot-journal-no-schema":
        _half_created_with_hot_journal(path)
        assert Path(f"{path}-journal").exists() and path.stat().st_size > 0
    else:
        path.write_bytes(b"")
        if left == "empty+journal":
            Path(f"{path}-journal").write_bytes(os.urandom(4096))
    with snap.record(path, name="again"):
        snap.checkpoint("one")
    listed = run_cli("ls", str(path))
    assert listed.returncode == 0, listed.stderr
    assert "again" in listed.stdout
    with snap.open_timeline(path) as timeline:
        assert [run.name for run in timeline.runs] == ["again"]
        assert len(timeline.runs[0].steps) == 1
    assert not Path(f"{path}-journal").exists()


def test_a_file_that_is_not_a_timeline_is_still_refused(tmp_path):
    path = tmp_path / "notes.snap"
    path.write_text("my notes, not a timeline\n")
    with snap.record(path):
        snap.checkpoint()
    assert path.read_text() == "my notes, not a timeline\n"


def _kill_during_close(path: Path, rng: random.Random) -> tuple[int, str]:
    """Record 300 turns, then SIGKILL the recorder inside its close: the moment a rollback
    journal appears beside the file (what an interrupted journal switch or VACUUM leaves), or,
    when none ever does, at a random moment of the close."""
    child = start(path, "checkpoint", 300)
    last = -1
    for line in child.stdout:
        if line.startswith("step "):
            last = int(line.split()[1])
        if line.strip() == "closing":
            break
    journal = Path(f"{path}-journal")
    deadline = time.monotonic() + rng.uniform(0.0, 0.25)
    while time.monotonic() < deadline and not journal.exists() and child.poll() is None:
        pass
    child.send_signal(signal.SIGKILL)
    child.communicate()
    return last, "journal" if journal.exists() else "random"


def test_a_recorder_killed_while_closing_leaves_a_file_readers_open(tmp_path):
    rng = random.Random(22)
    for attempt in range(4):
        path = tmp_path / f"close{attempt}.snap"
        last, _ = _kill_during_close(path, rng)
        assert last == 299
        for command in (("ls", str(path)), ("show", str(path)), ("verify", str(path))):
            done = run_cli(*command)
            assert done.returncode == 0, (command, done.stderr)
        with snap.open_timeline(path) as timeline:
            assert len(timeline.runs[-1].steps) == 300
        assert not Path(f"{path}-journal").exists()


def test_closing_leaves_wal_mode_without_a_rollback_journal_on_disk(tmp_path):
    path = tmp_path / "closed.snap"
    with snap.record(path):
        for i in range(50):
            snap.checkpoint("t", i=i, pad="x" * 3000)
    with open(path, "rb") as handle:
        header = handle.read(20)
    assert header[18:20] == b"\x01\x01"  # rollback-journal mode: opens read-only anywhere
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("closed")) \
        == ["closed.snap"]
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    assert conn.execute("SELECT count(*) FROM steps").fetchone()[0] == 50
    conn.close()


def _hot_journal_on(path: Path) -> bytes:
    """Leave ``path`` (a finished timeline) with a hot journal, as a writer of SnapState before
    format 4 killed inside its close's VACUUM did; returns the file's bytes then."""
    script = (
        "import os, signal, sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "conn.execute('PRAGMA journal_mode=DELETE')\n"
        "conn.execute('PRAGMA cache_size=1')\n"
        "conn.execute('BEGIN IMMEDIATE')\n"
        "conn.execute('UPDATE runs SET name=name || ?', ('-half-written',))\n"
        "conn.execute('DELETE FROM steps')\n"
        "conn.executemany('INSERT INTO meta VALUES (?, ?)',\n"
        "                 [(str(i), 'x' * 900) for i in range(300)])\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")
    subprocess.run([sys.executable, "-c", script, str(path)], check=False)
    assert Path(f"{path}-journal").exists()
    return path.read_bytes()


def test_readers_open_a_file_with_a_hot_journal_read_only(tmp_path):
    path = tmp_path / "hot.snap"
    with snap.record(path, name="kept"):
        for i in range(5):
            snap.checkpoint("t", i=i)
    on_disk = _hot_journal_on(path)
    for command in (("ls", str(path)), ("show", str(path), "--step", "4"), ("verify", str(path))):
        done = run_cli(*command)
        assert done.returncode == 0, (command, done.stderr)
    with snap.open_timeline(path) as timeline:  # the committed state, not the half-written one
        assert [(r.name, len(r.steps)) for r in timeline.runs] == [("kept", 5)]
    assert path.read_bytes() == on_disk and Path(f"{path}-journal").exists()  # untouched
    with snap.record(path, name="next"):  # a writer rolls it back for good
        snap.checkpoint("after")
    assert not Path(f"{path}-journal").exists()
    with snap.open_timeline(path) as timeline:
        assert [r.name for r in timeline.runs] == ["kept", "next"]


def test_replay_of_a_file_missing_a_blob_says_the_file_is_damaged(tmp_path):
    """A blob the replay needs first (the recorded random state) is gone: one line saying the
    timeline is damaged and what finds the rest, the file named once, exit 2."""
    script = tmp_path / "draw.py"
    script.write_text("import random\nprint(random.random())\n")
    path = tmp_path / "draw.snap"
    assert run_cli("record", "-o", str(path), str(script), cwd=tmp_path).returncode == 0
    with snap.open_timeline(path) as timeline:
        keys = list((timeline.runs[-1].entry.get("rng") or {}).values())
    assert keys
    with sqlite3.connect(path) as conn:
        conn.executemany("DELETE FROM blobs WHERE hash=?", [(bytes.fromhex(k),) for k in keys])
    conn.close()
    done = run_cli("replay", str(path), cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].count(str(path.name)) == 1, done.stderr
    assert "damaged timeline: the recorded random state cannot be read (missing blob" in lines[0]
    assert "snapstate verify" in lines[0] and "Traceback" not in done.stderr
