"""Hostile files: mutated valid timelines opened through the reader, ``ls``, ``show`` and
``verify`` give only clean errors, in bounded time and memory, and never modify the file.

Mutations: truncation, flipped bytes, overwritten SQLite pages, rows with absurd sizes and
types, enormous strings, deeply nested JSON — including blobs with *valid* hashes, so the
hostile content gets past the hash check and reaches the code that interprets it.
Hypothesis runs derandomized (the same examples on every run, so CI is deterministic).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import tracemalloc
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import snapstate_capture as snap
from snapstate_capture.store import chunks
from tests.fuzzing import open_every_way, walk_reader
from tests.hostile import Touch, add_blob, json_bytes

FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])
PAGE = 4096


@pytest.fixture(scope="module")
def valid_file(tmp_path_factory) -> Path:
    """A small, varied timeline: two runs, nested values, an exception step, a marker payload."""
    path = tmp_path_factory.mktemp("fuzz") / "valid.snap"
    marker = path.parent / "pwned"

    def work(n):
        table = {"n": n, "rows": [[i, str(i) * 3] for i in range(5)], "bomb": Touch(marker)}
        snap.checkpoint("work", n=n)
        return table

    options = snap.CaptureOptions(values=snap.ValueOptions(test_load=False))
    with snap.record(path, name="first", options=options):
        for n in range(3):
            work(n)
    try:
        with snap.record(path, name="second", options=options):
            work(7)
            raise ValueError("boom")
    except ValueError:
        pass
    return path


def _copy(valid: Path, directory: str) -> Path:
    target = Path(directory) / "mutant.snap"
    shutil.copyfile(valid, target)
    return target


def _check(path: Path) -> None:
    open_every_way(path)
    assert not (path.parent.parent / "pwned").exists()


@FUZZ
@given(fraction=st.floats(0.0, 1.0))
def test_truncated(valid_file, fraction):
    with tempfile.TemporaryDirectory() as directory:
        path = _copy(valid_file, directory)
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * fraction)])
        _check(path)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10**9), st.integers(1, 255)), min_size=1,
                      max_size=12))
def test_flipped_bytes(valid_file, flips):
    with tempfile.TemporaryDirectory() as directory:
        path = _copy(valid_file, directory)
        data = bytearray(path.read_bytes())
        for offset, mask in flips:
            data[offset % len(data)] ^= mask
        path.write_bytes(bytes(data))
        _check(path)


@FUZZ
@given(page=st.integers(0, 10**6), fill=st.sampled_from(["zeros", "ones", "random", "shift"]),
       seed=st.binary(min_size=8, max_size=8))
def test_corrupted_page(valid_file, page, fill, seed):
    with tempfile.TemporaryDirectory() as directory:
        path = _copy(valid_file, directory)
        data = bytearray(path.read_bytes())
        size = int.from_bytes(data[16:18], "big") or 65536  # the page size, from the header
        size = size if size >= 512 else PAGE
        count = max(len(data) // size, 1)
        start = (page % count) * size
        chunk_size = size
        if fill == "zeros":
            chunk = bytes(chunk_size)
        elif fill == "ones":
            chunk = b"\xff" * chunk_size
        elif fill == "random":
            chunk = (seed * (chunk_size // 8 + 1))[:chunk_size]
        else:  # the page's own bytes shifted by one: plausible-looking garbage
            chunk = bytes(data[start + 1:start + chunk_size]) + b"\x00"
        data[start:start + chunk_size] = chunk[:len(data) - start]
        path.write_bytes(bytes(data))
        _check(path)


# -- row-level mutations: what a crafted file can say -------------------------------------------

DEEP = "[" * 5000 + "]" * 5000
NEAR_LIMIT = "[" * 900 + "]" * 900
HUGE_TEXT = "x" * 3_000_000
ABSURD = [-1, 2**31, 2**62, 2**63 - 1, -(2**63), 1e308, float("nan"), "abc", b"\x00\xff", None,
          HUGE_TEXT, DEEP, NEAR_LIMIT, "", "\x1b]0;x\x07"]

RUN_COLUMNS = ["id", "seq", "name", "status", "started", "ended", "pid", "host", "proc_start",
               "entry", "env", "parent_run", "parent_step", "error", "step_count",
               "chain_head", "signature", "key_id"]
STEP_COLUMNS = ["idx", "kind", "label", "wall", "mono", "thread", "task", "function",
                "filename", "lineno", "depth", "frames", "extra", "errors", "n_changed", "hash"]
BLOB_COLUMNS = ["codec", "size", "data"]


def _set_column(path: Path, table: str, column: str, value: object, row: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        keys = conn.execute(f"SELECT rowid FROM {table}" if table == "runs" else
                            f"SELECT * FROM {table}").fetchall()
        if table == "runs":
            rowid = keys[row % len(keys)][0]
            conn.execute(f"UPDATE runs SET {column}=? WHERE rowid=?", (value, rowid))
        elif table == "steps":
            run_id, idx = keys[row % len(keys)][:2]
            conn.execute(f"UPDATE OR IGNORE steps SET {column}=? WHERE run_id=? AND idx=?",
                         (value, run_id, idx))
        else:
            key = keys[row % len(keys)][0]
            conn.execute(f"UPDATE OR IGNORE blobs SET {column}=? WHERE hash=?", (value, key))
    except sqlite3.IntegrityError:
        pass  # NOT NULL and the like: SQLite itself refuses this mutation
    finally:
        conn.close()


@FUZZ
@given(target=st.sampled_from([("runs", c) for c in RUN_COLUMNS]
                              + [("steps", c) for c in STEP_COLUMNS]
                              + [("blobs", c) for c in BLOB_COLUMNS]),
       value=st.sampled_from(range(len(ABSURD))), row=st.integers(0, 100))
def test_absurd_row_values(valid_file, target, value, row):
    with tempfile.TemporaryDirectory() as directory:
        path = _copy(valid_file, directory)
        _set_column(path, *target, ABSURD[value], row)
        _check(path)


def _hostile_preview(kind: str) -> object:
    if kind == "deep":
        node: object = {"type": "x", "repr": "leaf"}
        for _ in range(400):
            node = {"type": "list", "repr": "[…]", "children": [["[0]", node]]}
        return node
    if kind == "wide":
        return {"type": "list", "repr": "[…]", "len": 10**18,
                "children": [[f"[{i}]", {"type": "int", "repr": str(i)}] for i in range(5_000)]}
    if kind == "huge-repr":
        return {"type": "str", "repr": "y" * 400_000}
    if kind == "wrong-types":
        return {"type": ["not", "a", "string"], "repr": {"a": 1}, "children": "nope",
                "placeholder": 5, "len": "many", "redacted": "yes", "locked": 1, "sealed": [2]}
    if kind == "not-a-dict":
        return [1, 2, 3]
    if kind == "markup":
        return {"type": "[bold]t[/bold]", "repr": "\x1b]52;c;ZXZpbA==\x07[red]r[/red]"}
    raise AssertionError(kind)


PREVIEWS = ["deep", "wide", "huge-repr", "wrong-types", "not-a-dict", "markup"]
FRAMES = ["locals-not-list", "lineno-text", "lineno-inf", "source-missing", "source-binary",
          "ref-not-dict", "ref-bad-hash", "nested-record"]


def _hostile_frame(conn: sqlite3.Connection, kind: str, preview_key: str) -> object:
    ref = {"p": preview_key, "b": preview_key, "s": "pickle"}
    base = {"function": "f", "filename": "f.py", "lineno": 1, "locals": [["v", ref]]}
    if kind == "locals-not-list":
        return {**base, "locals": {"v": ref}}
    if kind == "lineno-text":
        return {**base, "lineno": "12abc"}
    if kind == "lineno-inf":
        return json.loads('{"function": "f", "lineno": Infinity, "locals": []}')
    if kind == "source-missing":
        return {**base, "source": "ab" * 16}
    if kind == "source-binary":
        return {**base, "source": add_blob(conn, b"\xff\xfe\x00" * 1000)}
    if kind == "ref-not-dict":
        return {**base, "locals": [["v", "p"], ["w", [1, 2]], [1, 2, 3]]}
    if kind == "ref-bad-hash":
        return {**base, "locals": [["v", {"p": "zz", "b": 7, "s": "dill"}]]}
    if kind == "nested-record":
        return json.loads(NEAR_LIMIT)
    raise AssertionError(kind)


@settings(FUZZ, max_examples=25)
@given(preview=st.sampled_from(PREVIEWS), frame=st.sampled_from([None, *FRAMES]),
       step=st.integers(0, 10))
def test_hostile_blobs_with_valid_hashes(valid_file, preview, frame, step):
    """Hostile JSON stored under its correct hash, wired into a step's stack."""
    with tempfile.TemporaryDirectory() as directory:
        path = _copy(valid_file, directory)
        conn = sqlite3.connect(path, isolation_level=None)
        preview_key = add_blob(conn, json_bytes(_hostile_preview(preview)))
        record = (_hostile_frame(conn, frame, preview_key) if frame else
                  {"function": "f", "filename": "f.py", "lineno": 1,
                   "locals": [["v", {"p": preview_key}]]})
        frame_key = add_blob(conn, json_bytes(record))
        rows = conn.execute("SELECT run_id, idx FROM steps").fetchall()
        run_id, idx = rows[step % len(rows)]
        conn.execute("UPDATE steps SET frames=?, extra=? WHERE run_id=? AND idx=?",
                     (json.dumps([frame_key]), json.dumps({"e": {"p": preview_key}}), run_id,
                      idx))
        conn.close()
        _check(path)


def test_zip_bomb_and_absurd_sizes_stay_in_bounded_memory(valid_file, tmp_path):
    """A 40 MB zlib bomb claiming 40 MB, and one claiming 2**62 bytes, used as frame records:
    refused or checked piecewise, never inflated whole."""
    path = tmp_path / "bomb.snap"
    shutil.copyfile(valid_file, path)
    conn = sqlite3.connect(path, isolation_level=None)
    bomb = zlib.compress(b"\x00" * 40_000_000, 9)
    frame_keys = []
    for n, claimed in enumerate((40_000_000, 2**62)):
        key = bytes([n + 1]) * 16  # rows nothing else depends on (no delta uses them as base)
        conn.execute("INSERT INTO blobs (hash, codec, size, data) VALUES (?,1,?,?)",
                     (key, claimed, bomb))
        frame_keys.append(key.hex())
    conn.execute("UPDATE steps SET frames=?", (json.dumps(frame_keys),))
    conn.close()
    tracemalloc.start()
    try:
        open_every_way(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"


def test_huge_step_count_claim_is_bounded(valid_file, tmp_path):
    path = tmp_path / "claims.snap"
    shutil.copyfile(valid_file, path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE runs SET step_count=?", (2**62,))
    conn.close()
    open_every_way(path)
    walk_reader(path)


def test_corrupt_schema_text_with_invalid_utf8(valid_file, tmp_path):
    """SQLite's error message then quotes bytes that are not UTF-8 (Python's sqlite3 raises
    UnicodeDecodeError building it): still one clean line."""
    base = valid_file.read_bytes()
    start = base.find(b"CREATE TABLE")
    for number, offset in enumerate((7, 21, 40)):
        path = tmp_path / f"schema{number}.snap"
        data = bytearray(base)
        data[start + offset:start + offset + 2] = b"\xff\xfe"
        path.write_bytes(bytes(data))
        open_every_way(path)


def _traced_work(n):
    rows = [[i, str(i)] for i in range(n)]
    total = sum(r[0] for r in rows)
    return total


@pytest.fixture(scope="module")
def traced_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("traced") / "traced.snap"
    with snap.record(path, name="traced", trace="lines", include=[__file__]):
        for n in range(3):
            _traced_work(n)
    return path


MARSHAL_BOMBS = {
    "huge-tuple": b"(" + (2**31 - 1).to_bytes(4, "little"),
    "huge-list": b"[" + (2**31 - 1).to_bytes(4, "little") + b"N" * 8,
    "code-object": __import__("marshal").dumps(compile("1", "x", "eval")),
    "not-a-pair": __import__("marshal").dumps([1, 2, 3]),
}


@pytest.mark.parametrize("bomb", sorted(MARSHAL_BOMBS))
def test_hostile_trace_chunks_are_refused_cheaply(traced_file, tmp_path, bomb):
    """marshal believes container sizes: 15 bytes could make it allocate 16 GB. Chunks are
    checked first (``store/marshal_check.py``)."""
    path = tmp_path / "chunk.snap"
    shutil.copyfile(traced_file, path)
    conn = sqlite3.connect(path, isolation_level=None)
    assert conn.execute("SELECT count(*) FROM trace_chunks").fetchone()[0]
    conn.execute("UPDATE trace_chunks SET data=?", (zlib.compress(MARSHAL_BOMBS[bomb]),))
    conn.close()
    tracemalloc.start()
    try:
        open_every_way(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"


@settings(FUZZ, max_examples=25)
@given(flips=st.lists(st.tuples(st.integers(0, 10**9), st.integers(1, 255)), min_size=1,
                      max_size=6), cut=st.integers(0, 10**9) | st.none())
def test_mutated_trace_chunks(traced_file, flips, cut):
    with tempfile.TemporaryDirectory() as directory:
        path = _copy(traced_file, directory)
        conn = sqlite3.connect(path, isolation_level=None)
        first, data = conn.execute("SELECT first, data FROM trace_chunks LIMIT 1").fetchone()
        raw = bytearray(chunks.inflate(data))
        for offset, mask in flips:
            raw[offset % len(raw)] ^= mask
        if cut is not None:
            raw = raw[: cut % len(raw)]
        conn.execute("UPDATE trace_chunks SET data=? WHERE first=?",
                     (zlib.compress(bytes(raw)), first))
        conn.close()
        _check(path)
