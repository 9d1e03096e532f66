"""The timeline file's SQLite schema and its version.

One file holds many runs. Every large or repeated thing — previews, payloads, frame records,
source text — is a row of ``blobs`` keyed by its content hash, so it is stored once per file.
Steps refer to frame records by hash; frame records refer to value previews, payloads and
source by hash (DESIGN.md "The timeline file").

Version history:
- 1: first format.
- 2: ``trace_chunks`` (additive; version-1 files are read as they are, and opened for writing
  the table is created). Steps recorded by the tracer (``record(trace=...)``,
  ``snapstate record``) are stored in chunks of consecutive steps rather than one ``steps`` row
  each: ``first``/``count`` give the step indices a chunk covers, ``data`` its encoding (see
  ``store.chunks``: a header with every live frame and its locals, then compact step items;
  scalars inline, other values as blob keys). A run may mix ``steps`` rows (checkpoints) and
  chunks; together they number the steps 0…step_count-1 without gaps. The hash chain advances
  once per chunk over ``{"chunk": BLAKE2b-128(data), "first", "count"}`` and once per
  ``steps`` row as before, in index order.
- 3: blob codecs beyond raw/zlib (zstandard, deltas against a previous version, manifests whose
  content is the concatenation of other blobs), chunked list/dict payloads and preview children
  stored by reference (``"kids"``); see ``store/blobs.py``, ``chunked.py``, ``store/previews.py``
  and docs/storage.md; trace chunks compressed with zstandard too (``store/chunks.py``: zlib
  chunks are still read). No table changes: older files are read as they are.
- 4: every run is **sealed** (``store/sealing.py``): ``runs.seal`` holds the hash of the run's
  statement — header, key id, step chain head, effect journal, end — and its place in the file
  (``seq``), rewritten with every change, signed or not; the step chain covers every column of
  a ``steps`` row (the innermost frame's function/file/line, depth and ``n_changed`` too) and
  is marked ``"v": 2``, so a sealed run whose seal was removed is still told from an older one.
  Older runs keep their version-1 chain and no seal, and are checked as before. Opened for
  writing, an older file gets the column (``connection.upgrade``).
- 5: checkpoint and ``@step`` frame records keep scalars inline (int, float, bool, None, str up
  to 200 characters: ``{"v": value}`` refs, as traced steps did since 2) instead of a preview
  and a payload blob each; chunked payloads of more than 64 chunks list group manifests of 64
  chunk keys (a tree: manifests were always joined recursively). See docs/storage.md. No table
  changes: older files are read as they are, and an older file opened for writing is marked 5.
- 6: durable waits (``capture/waits.py``, ``store/leases.py``). Runs may end ``waiting`` or
  ``sleeping``; their ``error`` column then holds the pause (what the run waits for: name,
  prompt, schema, or the due time) instead of an exception, sealed as the run's end — an
  older SnapState would show it as an exception, hence the new version. ``leases`` (additive):
  one row per run a resumer took, naming the holder, its expiry and, once made, the run's
  continuation; the continuation itself names the run it continues in its ``env``
  (``"continues"``, sealed in its header), which is what readers show. An answer is the
  waiting step's journaled result (sealed with the effect journal). Older files are read as
  they are (no leases); opened for writing, the table is created and the file marked 6.
"""

from __future__ import annotations

FORMAT_VERSION = 6
APPLICATION_ID = 0x534E4150  # "SNAP": PRAGMA application_id marks our files

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id           TEXT PRIMARY KEY,     -- 32 hex chars; users may type any unique prefix
    seq          INTEGER NOT NULL,     -- order of creation within the file
    name         TEXT NOT NULL,
    status       TEXT NOT NULL,        -- running | finished | failed | truncated | waiting | sleeping
    started      REAL NOT NULL,        -- wall clock, seconds since the epoch
    ended        REAL,
    pid          INTEGER,
    host         TEXT,
    proc_start   TEXT,                 -- recorder process start marker (liveness check)
    entry        TEXT NOT NULL,        -- JSON: how to start the run again
    env          TEXT NOT NULL,        -- JSON: python, packages, argv, cwd, host
    parent_run   TEXT,                 -- forks: the run and step they branch from
    parent_step  INTEGER,
    error        TEXT,                 -- JSON: the exception that ended a failed run, or the
                                       -- pause of a waiting/sleeping run (capture/waits.py)
    step_count   INTEGER NOT NULL DEFAULT 0,
    chain_head   BLOB,                 -- chain hash of the last step
    signature    BLOB,                 -- HMAC-SHA256 of the run's statement (trust)
    key_id       TEXT,
    seal         BLOB                  -- BLAKE2b-128 of the run's statement (store/sealing.py)
);
CREATE TABLE IF NOT EXISTS steps (
    run_id    TEXT NOT NULL,
    idx       INTEGER NOT NULL,
    kind      TEXT NOT NULL,           -- call | line | return | exception | checkpoint | effect | gap
    label     TEXT,
    wall      REAL NOT NULL,
    mono      REAL NOT NULL,
    thread    TEXT NOT NULL,
    task      TEXT,
    function  TEXT,                    -- innermost frame, for lists without loading frames
    filename  TEXT,
    lineno    INTEGER,
    depth     INTEGER NOT NULL DEFAULT 0,
    frames    TEXT NOT NULL,           -- JSON list of frame-record hashes (hex), outermost first
    extra     TEXT,                    -- JSON: name -> value ref (checkpoint extras, return value)
    errors    TEXT,                    -- JSON list of capture-error strings
    n_changed INTEGER NOT NULL DEFAULT 0,
    hash      BLOB NOT NULL,           -- chain hash up to and including this step
    PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs (
    hash  BLOB PRIMARY KEY,            -- BLAKE2b-128 of the uncompressed bytes
    codec INTEGER NOT NULL,            -- 0 raw, 1 zlib, 2 zstd, 3/4 delta, +16 manifest
    size  INTEGER NOT NULL,            -- uncompressed size in bytes
    data  BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trace_chunks (
    run_id  TEXT NOT NULL,
    first   INTEGER NOT NULL,          -- index of the chunk's first step
    count   INTEGER NOT NULL,          -- number of steps in the chunk
    data    BLOB NOT NULL,             -- zstd|zlib(marshal((header, items))), store/chunks.py
    hash    BLOB NOT NULL,             -- chain hash after this chunk
    PRIMARY KEY (run_id, first)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS effects (
    run_id     TEXT NOT NULL,
    seq        INTEGER NOT NULL,       -- order in the run's effect journal
    step       INTEGER,                -- the effect step recorded with it
    site       TEXT NOT NULL,          -- call site: function qualname + file:line
    task       TEXT,
    ordinal    INTEGER NOT NULL,       -- per (site, task) count
    name       TEXT NOT NULL,
    args_hash  TEXT,
    outcome    TEXT NOT NULL,          -- return | raise
    value      TEXT,                   -- JSON value ref of the result or exception
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (
    run_id       TEXT PRIMARY KEY,     -- the run being continued (waiting, sleeping, crashed)
    token        TEXT,                 -- the holder's random id; NULL once released
    holder       TEXT,                 -- who holds it: the resumer's user name
    host         TEXT,
    pid          INTEGER,
    acquired     REAL,                 -- wall clock, seconds since the epoch
    renewed      REAL,                 -- last heartbeat
    expires      REAL,                 -- free after this unless renewed
    continued_as TEXT                  -- the run's continuation, once created
) WITHOUT ROWID;
"""
