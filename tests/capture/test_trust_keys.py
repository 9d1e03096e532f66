"""The user key: where it lives, its permissions, overrides, and refusing unsafe key files."""

from __future__ import annotations

import os
import stat

import pytest

from snapstate_capture.trust import keys
from tests.conftest import run_cli


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_keygen_creates_owner_only_key_in_xdg_config(isolated_user_config):
    result = run_cli("keygen")
    assert result.returncode == 0, result.stderr
    path = isolated_user_config / "snapstate" / "key"
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    key = keys.load_key()
    assert key.path == path
    assert key.key_id in result.stdout and str(path) in result.stdout
    assert len(key.key_id) == 16 and len(key.secret) == 32
    # Derived subkeys are distinct from each other and from the secret.
    assert len({key.secret, key.signing, key.encryption}) == 3


def test_keygen_refuses_to_overwrite_without_force(isolated_user_config):
    first = keys.generate_key()
    result = run_cli("keygen")
    assert result.returncode == 2
    assert "already exists" in result.stderr and first.key_id in result.stderr
    assert keys.load_key().key_id == first.key_id
    forced = run_cli("keygen", "--force")
    assert forced.returncode == 0, forced.stderr
    assert keys.load_key().key_id != first.key_id
    assert _mode(keys.key_path()) == 0o600


def test_existing_loose_config_directory_is_tightened(isolated_user_config):
    directory = isolated_user_config / "snapstate"
    directory.mkdir(parents=True, mode=0o755)
    os.chmod(directory, 0o755)
    keys.generate_key()
    assert _mode(directory) == 0o700


def test_home_config_used_without_xdg(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert keys.key_path() == tmp_path / "home" / ".config" / "snapstate" / "key"
    keys.generate_key()
    assert _mode(tmp_path / "home" / ".config" / "snapstate") == 0o700


def test_snapstate_key_overrides_location(tmp_path, monkeypatch):
    custom = tmp_path / "elsewhere" / "ci.key"
    monkeypatch.setenv(keys.KEY_ENV, str(custom))
    created = keys.generate_key()
    assert created.path == custom and custom.exists()
    assert keys.find_key().key_id == created.key_id
    assert not (tmp_path / "user-config" / "snapstate" / "key").exists()


def test_find_key_is_none_without_a_key_file():
    assert keys.find_key() is None
    with pytest.raises(keys.KeyFileError, match="snapstate keygen"):
        keys.load_key()


@pytest.mark.parametrize("problem", ["group-readable", "garbage", "short", "directory"])
def test_unusable_key_files_are_refused(tmp_path, monkeypatch, problem):
    path = tmp_path / "key"
    monkeypatch.setenv(keys.KEY_ENV, str(path))
    if problem == "directory":
        path.mkdir()
    else:
        keys.generate_key()
        if problem == "group-readable":
            os.chmod(path, 0o640)
        elif problem == "garbage":
            path.write_text("hello\n")
        elif problem == "short":
            path.write_text("snapstate-key-v1 abcd\n")
    with pytest.raises(keys.KeyFileError, match=str(path)):
        keys.find_key()
