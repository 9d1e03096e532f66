"""A delta row whose base claims an absurd size is refused before anything is inflated."""

from __future__ import annotations

import sqlite3
import zlib

import pytest

import snapstate_capture as snap
from snapstate_capture.store import blobs
from tests.conftest import run_cli


def _bomb_the_preview(path):
    """Rewrite the first local's preview row as a delta against a base that claims 1 TB."""
    with snap.open_timeline(path) as timeline:
        value = next(iter(timeline.runs[-1].steps[0].frames[-1].locals.values()))
        target = bytes.fromhex(value.preview_key)
    base = b"\xbb" * blobs.DIGEST_SIZE
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO blobs (hash, codec, size, data) VALUES (?,?,?,?)",
                 (base, blobs.ZLIB, 10 ** 12, zlib.compress(b"\0" * 100_000)))
    conn.execute("UPDATE blobs SET codec=?, data=? WHERE hash=?",
                 (blobs.ZDELTA, base + b"payload", target))
    conn.commit()
    conn.close()


def test_delta_base_bomb_is_a_clean_error(tmp_path):
    path = tmp_path / "bomb.snap"
    with snap.record(path):
        note = "hello"
        snap.checkpoint("one")
    assert note
    _bomb_the_preview(path)
    with snap.open_timeline(path) as timeline:
        value = next(iter(timeline.runs[-1].steps[0].frames[-1].locals.values()))
        with pytest.raises(snap.IntegrityError, match="too large"):
            value.preview
    result = run_cli("show", str(path))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
