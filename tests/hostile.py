"""Building hostile and tampered timeline files for the trust tests.

``marker_file(path, marker)`` records a run whose values' payloads, when unpickled, create the
file ``marker``: the proof that nothing unpickles is that ``marker`` never appears.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import snapstate_capture as snap
from snapstate_capture.store.hashing import GENESIS, chain_hash, content_hash
from snapstate_capture.store import blobs
from snapstate_capture.store.step_record import chain_fields


class Touch:
    """An object whose pickle, when loaded, creates ``path`` (and nothing else)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple:
        return (pathlib.Path.touch, (pathlib.Path(self.path),))

    def __repr__(self) -> str:
        return "Touch()"


@contextlib.contextmanager
def as_stranger(directory: Path) -> Iterator[Path]:
    """Inside the block, runs are recorded by someone else: signed with their own key
    (``directory / "stranger.key"``, made on their first record), as a file received from a
    teammate or a stranger is. The user's own key is neither used nor created."""
    key = Path(directory) / "stranger.key"
    old = os.environ.get("SNAPSTATE_KEY")
    os.environ["SNAPSTATE_KEY"] = str(key)
    try:
        yield key
    finally:
        if old is None:
            os.environ.pop("SNAPSTATE_KEY", None)
        else:
            os.environ["SNAPSTATE_KEY"] = old


def marker_file(path: Path, marker: Path, *, steps: int = 3, mine: bool = False) -> Path:
    """Record, as a stranger (``as_stranger``; ``mine``: as the user, with their key),
    ``steps`` checkpoints holding ``Touch(marker)`` values (as a local, inside a list, and as a
    checkpoint extra) without ever loading them; returns ``path``."""
    options = snap.CaptureOptions(values=snap.ValueOptions(test_load=False))
    who = contextlib.nullcontext() if mine else as_stranger(Path(path).parent)
    with who, snap.record(path, name="hostile", options=options):
        bomb = Touch(marker)
        nested = {"items": [1, Touch(marker)]}
        for i in range(steps):
            snap.checkpoint(f"step {i}", bomb=Touch(marker))
    assert bomb and nested
    assert not marker.exists(), "recording must not load the payload"
    return path


def connect(path: Path) -> sqlite3.Connection:
    """A read-write connection for tampering (autocommit)."""
    return sqlite3.connect(path, isolation_level=None)


def payload_keys(path: Path) -> list[bytes]:
    """Binary keys of every payload (``"b"``) blob referenced by frame records."""
    found: list[bytes] = []
    conn = connect(path)

    def fetch(key: bytes) -> tuple[int, int, bytes] | None:
        return conn.execute("SELECT codec, size, data FROM blobs WHERE hash=?", (key,)).fetchone()

    source = blobs.BlobSource(fetch)
    try:
        for (key,) in conn.execute("SELECT hash FROM blobs").fetchall():
            plain = source.inner(key)[1]
            try:
                record = json.loads(plain)
            except (TypeError, ValueError, UnicodeDecodeError):
                continue
            if isinstance(record, dict) and "locals" in record:
                for _, ref in record["locals"]:
                    if "b" in ref:
                        found.append(bytes.fromhex(ref["b"]))
    finally:
        conn.close()
    return list(dict.fromkeys(found))


def flip_byte(path: Path, key: bytes, offset: int = 3) -> None:
    """Flip one bit of the stored bytes of blob ``key`` (its hash no longer matches)."""
    conn = connect(path)
    data = bytearray(conn.execute("SELECT data FROM blobs WHERE hash=?", (key,)).fetchone()[0])
    data[offset % len(data)] ^= 0x01
    conn.execute("UPDATE blobs SET data=? WHERE hash=?", (bytes(data), key))
    conn.close()


def rechain(path: Path, run_id: str) -> None:
    """Recompute a run's step hashes and chain head from its rows, as an attacker without the
    key would after editing steps: the chain is consistent again, the signature is not."""
    conn = connect(path)
    previous = GENESIS
    sealed = conn.execute("SELECT seal FROM runs WHERE id=?", (run_id,)).fetchone()[0]
    rows = conn.execute("SELECT idx, kind, label, wall, mono, thread, task, frames, extra, errors,"
                        " function, filename, lineno, depth, n_changed"
                        " FROM steps WHERE run_id=? ORDER BY idx", (run_id,)).fetchall()
    for (idx, kind, label, wall, mono, thread, task, frames, extra, errors, function, filename,
         lineno, depth, n_changed) in rows:
        previous = chain_hash(previous, chain_fields(
            kind, label, wall, mono, thread, task, json.loads(frames),
            json.loads(extra) if extra else None, json.loads(errors) if errors else None,
            function=function, filename=filename, lineno=lineno, depth=depth,
            n_changed=n_changed, version=2 if sealed is not None else 1))
        conn.execute("UPDATE steps SET hash=? WHERE run_id=? AND idx=?", (previous, run_id, idx))
    conn.execute("UPDATE runs SET chain_head=?, step_count=? WHERE id=?",
                 (previous, len(rows), run_id))
    conn.close()
    if sealed is not None:
        reseal(path, run_id)


def reseal(path: Path, run_id: str) -> None:
    """Recompute a run's seal from its rows, as an attacker without the key can (the seal is
    an unkeyed hash): an unsigned run then verifies again; a signed one's signature does not."""
    from snapstate_capture.store import sealing

    conn = connect(path)
    conn.execute("UPDATE runs SET seal=? WHERE id=?",
                 (sealing.seal_of(_statement_state(conn, run_id, sealing.VERSION)), run_id))
    conn.close()


def add_blob(conn: sqlite3.Connection, data: bytes) -> str:
    """Insert ``data`` as a proper blob and return its hex key."""
    key, codec, stored = blobs.encode(data)
    conn.execute("INSERT OR IGNORE INTO blobs (hash, codec, size, data) VALUES (?,?,?,?)",
                 (key, codec, len(data), stored))
    return key.hex()


def json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def last_run_id(path: Path) -> str:
    conn = connect(path)
    try:
        return conn.execute("SELECT id FROM runs ORDER BY seq DESC LIMIT 1").fetchone()[0]
    finally:
        conn.close()


__all__ = ["Touch", "add_blob", "as_stranger", "connect", "content_hash", "flip_byte", "json_bytes",
           "last_run_id", "marker_file", "payload_keys", "rechain"]


def _statement_state(conn: sqlite3.Connection, run_id: str, version: int) -> Any:
    """The run's ``sealing.RunState`` recomputed from its rows in statement ``version``."""
    from snapstate_capture.store import sealing

    (name, started, pid, host, proc_start, entry, env, parent_run, parent_step, status, ended,
     error, step_count, chain_head, key_id, seq) = conn.execute(
        "SELECT name, started, pid, host, proc_start, entry, env, parent_run, parent_step,"
        " status, ended, error, step_count, chain_head, key_id, seq FROM runs WHERE id=?",
        (run_id,)).fetchone()
    state = sealing.RunState(
        run_id, sealing.header_digest(run_id=run_id, name=name, started=started, pid=pid,
                                      host=host, proc_start=proc_start, entry=entry, env=env,
                                      parent_run=parent_run, parent_step=parent_step),
        key_id=key_id if version >= 2 else None, seq=seq, steps=step_count,
        head=chain_head or GENESIS, version=version,
        end=None if status == "running" else sealing.end_fields(status=status, ended=ended,
                                                                  error=error))
    for row in conn.execute("SELECT seq, step, site, task, ordinal, name, args_hash, outcome,"
                            " value FROM effects WHERE run_id=? ORDER BY seq", (run_id,)):
        state = state.with_effect(sealing.effect_fields(**dict(zip(
            ("seq", "step", "site", "task", "ordinal", "name", "args_hash", "outcome",
             "value"), row))))
    return state


def downgrade_to_format3(path: Path, key: Any = None) -> None:
    """Rewrite a file as SnapState's format 3 wrote it (no seals, step chains of version 1,
    signatures over the version-1 statement under ``key``): a file from before issue 22."""
    from snapstate_capture.trust.signing import sign_state

    conn = connect(path)
    run_ids = [row[0] for row in conn.execute("SELECT id FROM runs")]
    conn.close()
    for run_id in run_ids:
        conn = connect(path)
        conn.execute("UPDATE runs SET seal=NULL WHERE id=?", (run_id,))
        conn.close()
        rechain(path, run_id)
    conn = connect(path)
    for run_id in run_ids:
        state = _statement_state(conn, run_id, 1)
        signature = sign_state(key, state) if key is not None else None
        conn.execute("UPDATE runs SET signature=?, key_id=? WHERE id=?",
                     (signature, key.key_id if key is not None else None, run_id))
    conn.execute("ALTER TABLE runs DROP COLUMN seal")
    conn.execute("PRAGMA user_version=3")
    conn.close()
