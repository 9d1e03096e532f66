"""The PostgreSQL store's schema and its version (the tables of ``store.sqlite.schema``)."""

from __future__ import annotations

#: Version of the store's layout; a store of a newer version is refused. 2: ``runs.seal``
#: (``store.sealing``), added to a version-1 store on first write. 3: durable waits, as
#: format 6 of a file (``store.sqlite.schema``): ``waiting``/``sleeping`` runs and ``leases``.
STORE_VERSION = 3
#: The Postgres schema everything lives in (never ``public``).
SCHEMA_NAME = "snapstate"

DDL = f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA_NAME};
SET search_path TO {SCHEMA_NAME};
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE SEQUENCE IF NOT EXISTS run_seq;
CREATE TABLE IF NOT EXISTS runs (
    id           TEXT PRIMARY KEY,
    seq          BIGINT NOT NULL,
    name         TEXT NOT NULL,
    status       TEXT NOT NULL,
    started      DOUBLE PRECISION NOT NULL,
    ended        DOUBLE PRECISION,
    pid          BIGINT,
    host         TEXT,
    proc_start   TEXT,
    entry        TEXT NOT NULL,
    env          TEXT NOT NULL,
    parent_run   TEXT,
    parent_step  BIGINT,
    error        TEXT,
    step_count   BIGINT NOT NULL DEFAULT 0,
    chain_head   BYTEA,
    signature    BYTEA,
    key_id       TEXT,
    seal         BYTEA
);
ALTER TABLE runs ADD COLUMN IF NOT EXISTS seal BYTEA;
CREATE INDEX IF NOT EXISTS runs_seq ON runs (seq);
CREATE TABLE IF NOT EXISTS steps (
    run_id    TEXT NOT NULL,
    idx       BIGINT NOT NULL,
    kind      TEXT NOT NULL,
    label     TEXT,
    wall      DOUBLE PRECISION NOT NULL,
    mono      DOUBLE PRECISION NOT NULL,
    thread    TEXT NOT NULL,
    task      TEXT,
    function  TEXT,
    filename  TEXT,
    lineno    BIGINT,
    depth     BIGINT NOT NULL DEFAULT 0,
    frames    TEXT NOT NULL,
    extra     TEXT,
    errors    TEXT,
    n_changed BIGINT NOT NULL DEFAULT 0,
    hash      BYTEA NOT NULL,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS blobs (
    hash  BYTEA PRIMARY KEY,
    codec INTEGER NOT NULL,
    size  BIGINT NOT NULL,
    data  BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS trace_chunks (
    run_id  TEXT NOT NULL,
    first   BIGINT NOT NULL,
    count   BIGINT NOT NULL,
    data    BYTEA NOT NULL,
    hash    BYTEA NOT NULL,
    PRIMARY KEY (run_id, first)
);
CREATE TABLE IF NOT EXISTS effects (
    run_id     TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    step       BIGINT,
    site       TEXT NOT NULL,
    task       TEXT,
    ordinal    BIGINT NOT NULL,
    name       TEXT NOT NULL,
    args_hash  TEXT,
    outcome    TEXT NOT NULL,
    value      TEXT,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS leases (
    run_id       TEXT PRIMARY KEY,
    token        TEXT,
    holder       TEXT,
    host         TEXT,
    pid          BIGINT,
    acquired     DOUBLE PRECISION,
    renewed      DOUBLE PRECISION,
    expires      DOUBLE PRECISION,
    continued_as TEXT
);
INSERT INTO meta (key, value) VALUES ('version', '{STORE_VERSION}') ON CONFLICT DO NOTHING;
UPDATE meta SET value = '{STORE_VERSION}' WHERE key = 'version' AND value < '{STORE_VERSION}';
"""
