"""Teammates' public keys the user trusts (``snapstate trust add/list/remove``).

They live beside the user's key, in ``trusted_keys`` (``key_path().parent``: with
``SNAPSTATE_KEY=/a/key`` that is ``/a/trusted_keys``), one line per key, ``NAME KEY`` with KEY
as ``snapstate keys export`` prints it (``trust.public_keys``). The file is owner-only (0600 in
an owner-only directory) and a file others may write is refused: whoever can add a line there
decides whose pickles load. A run signed with a trusted key verifies as "signed by NAME"
(``verify``), and its payloads load without ``--trust`` (``trust.gate``).
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from .keys import KeyFileError, find_key, key_path, make_private_dir
from .public_keys import PublicKeyError, parse_exported

#: Names a trusted key may have: what a shell argument and a line of the file hold safely.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")


class TrustFileError(KeyFileError):
    """The trusted-keys file cannot be read or written, or an entry is refused; the message
    names the file (or the key) and what to do."""


@dataclass(frozen=True)
class TrustedKey:
    """A teammate's key: the ``name`` it was trusted under, its ``key_id`` (what their runs
    record) and the 32-byte Ed25519 ``public`` key; ``text`` as it was exported."""

    name: str
    key_id: str
    public: bytes
    text: str


def trusted_path() -> Path:
    """The trusted-keys file: ``trusted_keys`` beside the user's key file."""
    return key_path().parent / "trusted_keys"


def load_trusted(path: Path | None = None) -> list[TrustedKey]:
    """The trusted keys in file order (none when the file does not exist).

    Raises ``TrustFileError`` when the file is writable by group or others, unreadable, or
    has a malformed line (named by its number).
    """
    path = Path(path) if path is not None else trusted_path()
    try:
        info = path.stat()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise TrustFileError(f"{path}: cannot read trusted keys ({exc.strerror or exc})") \
            from None
    if not stat.S_ISREG(info.st_mode):
        raise TrustFileError(f"{path}: not a trusted-keys file")
    if stat.S_IMODE(info.st_mode) & 0o022:
        raise TrustFileError(f"{path}: others may change whom you trust "
                             f"(mode {stat.S_IMODE(info.st_mode):o}); run chmod 600 on it")
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TrustFileError(f"{path}: cannot read trusted keys ({exc})") from None
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        try:
            if len(parts) != 2 or not NAME.match(parts[0]):
                raise PublicKeyError("expected NAME KEY")
            key_id, public = parse_exported(parts[1])
        except PublicKeyError as exc:
            raise TrustFileError(f"{path}: line {number} is malformed ({exc})") from None
        out.append(TrustedKey(parts[0], key_id, public, parts[1]))
    return out


def trusted_by_id() -> dict[str, TrustedKey]:
    """The trusted keys by key id (a broken file is reported by ``load_trusted``)."""
    return {entry.key_id: entry for entry in load_trusted()}


def add_trusted(name: str, text: str) -> TrustedKey:
    """Trust the exported key ``text`` as ``name`` and return the entry.

    Raises ``TrustFileError`` for a name that is not a plain word, a key that is not an
    exported key (``PublicKeyError``'s words), the user's own key, a name or key id already
    trusted (remove it first), or a file that cannot be written.
    """
    if not NAME.match(name):
        raise TrustFileError(f"{name!r} is not a usable name (letters, digits and . _ @ + -, "
                             "at most 64)")
    try:
        key_id, public = parse_exported(text)
    except PublicKeyError as exc:
        raise TrustFileError(str(exc)) from None
    own = find_key()
    if own is not None and own.key_id == key_id:
        raise TrustFileError(f"{key_id} is your own key: your runs are trusted already")
    entries = load_trusted()
    for entry in entries:
        if entry.name == name or entry.key_id == key_id:
            raise TrustFileError(f"{trusted_path()}: {entry.name} ({entry.key_id}) is trusted "
                                 f"already; `snapstate trust remove {entry.name}` first")
    added = TrustedKey(name, key_id, public, text.strip())
    _write([*entries, added])
    return added


def remove_trusted(name: str) -> TrustedKey:
    """Stop trusting the key named ``name`` (or with that key id) and return it; raises
    ``TrustFileError`` when no entry has it."""
    entries = load_trusted()
    kept = [e for e in entries if name not in (e.name, e.key_id)]
    if len(kept) == len(entries):
        known = ", ".join(e.name for e in entries) or "none"
        raise TrustFileError(f"{trusted_path()}: no trusted key named {name!r} "
                             f"(trusted: {known})")
    _write(kept)
    return next(e for e in entries if name in (e.name, e.key_id))


def _write(entries: list[TrustedKey]) -> None:
    """Replace the file atomically, owner-only, in an owner-only directory."""
    path = trusted_path()
    body = "".join(f"{e.name} {e.text}\n" for e in entries)
    try:
        make_private_dir(path.parent)
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, body.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError as exc:
        raise TrustFileError(f"{path}: cannot write trusted keys ({exc.strerror or exc})") \
            from None
