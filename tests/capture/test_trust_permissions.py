"""Files and directories SnapState creates are owner-only: 0600 files, 0700 directories."""

from __future__ import annotations

import os
import stat

import snapstate_capture as snap


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_timeline_file_and_new_directories_are_owner_only(tmp_path):
    os.chmod(tmp_path, 0o755)
    path = tmp_path / "a" / "b" / "run.snap"
    old_umask = os.umask(0o022)
    try:
        with snap.record(path):
            x = 1
            snap.checkpoint()
            # While recording, SQLite's companions take the database file's mode.
            companions = [p for p in path.parent.iterdir() if p != path]
            assert companions and all(_mode(p) == 0o600 for p in companions)
    finally:
        os.umask(old_umask)
    assert x
    assert _mode(path) == 0o600
    assert _mode(tmp_path / "a") == 0o700 and _mode(tmp_path / "a" / "b") == 0o700
    assert _mode(tmp_path) == 0o755  # an existing directory is the user's business


def test_appending_keeps_an_existing_files_mode(tmp_path):
    path = tmp_path / "run.snap"
    with snap.record(path):
        snap.checkpoint()
    with snap.record(path):
        snap.checkpoint()
    assert _mode(path) == 0o600
