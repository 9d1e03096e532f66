"""Filling a store with many runs cheaply, through the engine's bulk insert (``insert_run_rows``):
the runs screen's fixture for 100,000 runs. Each run is a plain finished run row (no steps):
what the runs list reads of a run is its row."""

from __future__ import annotations

import json
import uuid

from snapstate_capture.store.locations import open_write_engine

USERS = ("ana", "bo", "chen", "dita")
HOSTS = ("agent-1", "agent-2", "agent-3")
STATUSES = ("finished", "finished", "finished", "failed")
BATCH = 5000


def run_rows(count: int, *, first_seq: int = 1, started: float = 1.7e9) -> list[dict]:
    """``count`` run rows (``RUN_COLUMNS`` keys): names ``job-N``, users, hosts and statuses in
    turn, every 1000th a fork of the one before it; started a minute apart, each 3 s long."""
    rows = []
    previous = None
    entry = json.dumps({"kind": "script", "path": "job.py", "argv": []})
    envs = [json.dumps({"host": host, "user": user}) for host in HOSTS for user in USERS]
    for n in range(count):
        run_id = uuid.uuid4().hex
        begin = started + 60 * n
        fork = n % 1000 == 999 and previous is not None
        rows.append({
            "id": run_id, "seq": first_seq + n, "name": f"job-{n}",
            "status": STATUSES[n % len(STATUSES)], "started": begin, "ended": begin + 3.0,
            "pid": 1000 + n, "host": HOSTS[n % len(HOSTS)], "proc_start": None,
            "entry": entry,
            "env": envs[(n % len(HOSTS)) * len(USERS) + n % len(USERS)],
            "parent_run": previous if fork else None, "parent_step": 2 if fork else None,
            "error": None, "step_count": 0, "chain_head": None, "signature": None,
            "key_id": None})
        previous = run_id
    return rows


def fill_runs(location: str, count: int) -> list[dict]:
    """Insert ``count`` runs (``run_rows``) into the store at ``location``; returns the rows."""
    rows = run_rows(count)
    engine = open_write_engine(location)
    try:
        for start in range(0, count, BATCH):
            with engine.transaction(immediate=True) as handle:
                handle.insert_run_rows(rows[start:start + BATCH])
    finally:
        engine.close(compact=False)
    return rows
