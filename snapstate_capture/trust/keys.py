"""The user key: one secret per user that signs (and optionally encrypts) their timelines.

Where it lives: ``$SNAPSTATE_KEY`` when set (a path to a key file), else
``$XDG_CONFIG_HOME/snapstate/key``, else ``~/.config/snapstate/key`` (the XDG Base Directory
convention). The first ``record`` creates it when there is none (``ensure_key``), so one's own
runs are signed by default; ``snapstate keygen`` creates it explicitly. Either way: 32 random bytes from ``secrets`` written as one
line of hex, the file owner-only (0600) in an owner-only directory (0700), as ``ssh-keygen``
does for private keys. A key file that others can read is refused, as ssh refuses one.

Two keys are derived from the secret with HMAC-SHA256 and a purpose label (domain separation,
so a signature can never be replayed as a nonce or the other way round): one signs run chains
(``signing``), one encrypts values (``encryption``). The **key id** is a public fingerprint of
the secret (16 hex chars); a signed run records it, so ``snapstate verify`` can say "signed by
another key" instead of "invalid".
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ..errors import SnapStateError

#: Environment variable naming a key file that replaces the default one.
KEY_ENV = "SNAPSTATE_KEY"
KEY_BYTES = 32
_HEADER = "snapstate-key-v1"


class KeyFileError(SnapStateError):
    """The user key is missing, unreadable, malformed or readable by others.

    The message names the key file and what to do (``snapstate keygen``).
    """


@dataclass(frozen=True)
class UserKey:
    """A loaded user key: ``secret`` (32 bytes), ``path`` it came from (None if built in memory).

    ``key_id`` is a 16-hex-char public fingerprint; ``signing`` and ``encryption`` are 32-byte
    subkeys derived with HMAC-SHA256 (never the secret itself).
    """

    secret: bytes = field(repr=False)
    path: Path | None = None

    def _derive(self, purpose: str) -> bytes:
        return hmac.new(self.secret, f"snapstate/{purpose}/v1".encode(), hashlib.sha256).digest()

    # Derived once per key (a writer signs every change of a run with them).
    @cached_property
    def key_id(self) -> str:
        return hashlib.sha256(b"snapstate/key-id/v1" + self.secret).hexdigest()[:16]

    @cached_property
    def signing(self) -> bytes:
        return self._derive("sign")

    @cached_property
    def encryption(self) -> bytes:
        return self._derive("encrypt")


def config_dir() -> Path:
    """Return the user's snapstate config directory (``$XDG_CONFIG_HOME/snapstate`` or
    ``~/.config/snapstate``); it may not exist yet."""
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "snapstate"


def key_path() -> Path:
    """Return the key file in use: ``$SNAPSTATE_KEY`` if set, else ``config_dir() / "key"``."""
    override = os.environ.get(KEY_ENV)
    if override:
        return Path(override).expanduser()
    return config_dir() / "key"


def generate_key(path: Path | None = None, *, force: bool = False) -> UserKey:
    """Create a new key file at ``path`` (default ``key_path()``) and return the key.

    The directory is created 0700 (and tightened to 0700 if it is ours and looser), the file
    written 0600 via ``O_EXCL`` (or replaced atomically with ``force``). Raises
    ``KeyFileError`` when a key exists and ``force`` is False, or the file cannot be written.
    """
    path = Path(path) if path is not None else key_path()
    if path.exists() and not force:
        raise KeyFileError(f"{path}: a key already exists (key id {_peek_id(path)}); "
                           "--force replaces it, and files signed with it then show as "
                           "signed by another key")
    key = UserKey(secrets.token_bytes(KEY_BYTES), path)
    text = f"{_HEADER} {key.secret.hex()}\n".encode("ascii")
    try:
        make_private_dir(path.parent)
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, text)
            os.fsync(fd)
        finally:
            os.close(fd)
        if force:
            os.replace(temp, path)
        else:
            try:
                os.link(temp, path)  # fails if a key appeared meanwhile: never overwrite silently
            finally:
                os.unlink(temp)
    except FileExistsError:
        raise KeyFileError(f"{path}: a key already exists") from None
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot write key ({exc.strerror or exc})") from None
    return UserKey(key.secret, path)


def make_private_dir(directory: Path) -> None:
    """Create ``directory`` (and missing parents) owner-only (0700); tighten it if it exists,
    is owned by us and is looser. Raises ``OSError``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = directory.stat()
    if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(directory, 0o700)


def load_key(path: Path | None = None) -> UserKey:
    """Read the key file (default ``key_path()``) and return the key.

    Raises ``KeyFileError`` when it is missing (hint: ``snapstate keygen``), malformed, or
    readable or writable by group or others (as ssh refuses such a private key).
    """
    path = Path(path) if path is not None else key_path()
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise KeyFileError(f"{path}: not a key file")
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise KeyFileError(f"{path}: key file is accessible by others "
                               f"(mode {stat.S_IMODE(info.st_mode):o}); run chmod 600 on it")
        seen = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        known = _loaded.get(str(path))
        if known is not None and known[0] == seen and \
                time.time_ns() - info.st_mtime_ns > _RACY_NS:
            return known[1]  # the same file, unchanged since it was read
        with open(path, "rb") as handle:
            text = handle.read(256)
    except FileNotFoundError:
        raise KeyFileError(f"{path}: no key; create one with `snapstate keygen`") from None
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read key ({exc.strerror or exc})") from None
    parts = text.decode("ascii", "replace").split()
    if len(parts) != 2 or parts[0] != _HEADER:
        raise KeyFileError(f"{path}: not a snapstate key file")
    try:
        secret = bytes.fromhex(parts[1])
    except ValueError:
        raise KeyFileError(f"{path}: malformed key") from None
    if len(secret) != KEY_BYTES:
        raise KeyFileError(f"{path}: malformed key (wrong length)")
    key = UserKey(secret, path)
    _loaded[str(path)] = (seen, key)
    return key


#: Keys read in this process: path -> ((device, inode, size, mtime, ctime) of the file read,
#: the key). ``load_key`` reads a file again when any of these changed (a new key, a copy
#: put in its place, a change of mode); every record reads the key (``pytest --snapstate``:
#: at each test), and the open and read cost ~40 µs.
_loaded: dict[str, tuple[tuple[int, ...], UserKey]] = {}
#: A file written less than this long ago (ns) is read again whatever its times say: file
#: times tick coarsely (a few ms), so a rewrite in place of the same size right after a read
#: could keep them all (git's "racy" index entries, the same guard).
_RACY_NS = 2_000_000_000


def find_key() -> UserKey | None:
    """Return the user's key, or None when there is no key file at all.

    For code that works with or without a key (recording signs only when a key exists).
    Raises ``KeyFileError`` when a key file exists but cannot be used: a broken key is reported,
    never silently ignored.
    """
    path = key_path()
    if not os.path.lexists(path):
        return None
    return load_key(path)


#: Set once the "recording unsigned" warning was printed: a process warns at most once.
_unsigned_warned = False


@dataclass(frozen=True)
class KeyChoice:
    """What ``ensure_key`` found: the ``key`` to sign with (None: record unsigned), whether it
    was ``created`` just now, and the ``problem`` (one line) when there is no usable key."""

    key: UserKey | None
    created: bool = False
    problem: str | None = None


def ensure_key() -> KeyChoice:
    """Return the user's key, creating it at ``key_path()`` when there is none (DESIGN.md
    "Trust": the user's key is created on first record, so one's own runs are signed).

    Never raises: a key file that exists but is unusable, or a key that cannot be created (a
    read-only home), gives ``KeyChoice(None, problem=...)``; the caller records unsigned.
    Two processes creating the key at once end up with the same key (the file is linked into
    place only when complete, and the loser reads the winner's).
    """
    try:
        key = find_key()
    except KeyFileError as exc:
        return KeyChoice(None, problem=str(exc))
    if key is not None:
        return KeyChoice(key)
    try:
        return KeyChoice(generate_key(), created=True)
    except KeyFileError as exc:
        try:
            key = find_key()  # another process created it first
        except KeyFileError:
            key = None
        if key is not None:
            return KeyChoice(key)
        return KeyChoice(None, problem=f"{exc}; set SNAPSTATE_KEY to a key file in a writable "
                                       "place, or run `snapstate keygen` once it is writable")


def warn_unsigned_once(problem: str, write: Callable[[str], object]) -> None:
    """Write "runs are recorded unsigned: PROBLEM" through ``write`` the first time in this
    process (a program recording one run per call warns once, not at every run)."""
    global _unsigned_warned
    if _unsigned_warned:
        return
    _unsigned_warned = True
    write(f"runs are recorded unsigned: {problem}")


def _peek_id(path: Path) -> str:
    try:
        return load_key(path).key_id
    except KeyFileError:
        return "unreadable"
