"""Issue 19: what the SQLite side of one recorded step costs, by how many blob rows it writes.

A W1 step commits one transaction: its new blobs (six of ~50-200 stored bytes each, under
random content-hash keys in the WITHOUT ROWID ``blobs`` table), its ``steps`` row and the
run's chain head (an UPDATE of its ``runs`` row). Every random key dirties a B-tree page of its
own, and the COMMIT writes each dirty page whole to the WAL (16 kB pages: ~136 kB a W1 step).
This bench times that transaction alone, in the shapes a file format could give it, so a
format change is weighed by what it would save before it is made:

- ``rows``: six blob rows with random keys, the step row, the chain update (today's format);
- ``one-row``: the same bytes packed in one blob row (a format writing a step's small blobs
  together, found through an index not updated per step);
- ``no-blobs``: the step row and the chain update only (the floor of one commit per step).

Each shape runs ``--steps`` transactions into a fresh WAL file with ``synchronous=NORMAL``
(the recorder's settings, ``store/sqlite/connection.py``), at 16 kB and 4 kB pages,
``--repeats`` times interleaved; printed: CPU and wall µs per step, min and median, and the
ratio of each shape's median CPU to ``rows``' in the same run.

Usage: ``python bench/bench_sqlite_layout.py [--steps 3000] [--repeats 5]``. Exit 0 (figures,
not a test).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import tempfile
import time

#: Stored sizes of a W1 step's six new blobs (measured: the tail chunk's delta, the messages
#: manifest, the preview's children node, two scratchpad deltas, the frame record's delta).
W1_BLOBS = (204, 53, 41, 111, 61, 176)
SHAPES = ("rows", "one-row", "no-blobs")


def run(shape: str, steps: int, page_size: int, path: str) -> tuple[float, float]:
    """CPU and wall seconds per step of ``steps`` transactions of ``shape``."""
    for leftover in (path, path + "-wal", path + "-shm"):
        if os.path.exists(leftover):
            os.unlink(leftover)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA page_size={page_size}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE blobs (hash BLOB PRIMARY KEY, codec INTEGER, size INTEGER, "
                 "data BLOB) WITHOUT ROWID")
    conn.execute("CREATE TABLE steps (run_id TEXT, idx INTEGER, frames TEXT, hash BLOB, "
                 "PRIMARY KEY (run_id, idx)) WITHOUT ROWID")
    conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, step_count INTEGER, chain_head BLOB)")
    conn.execute("INSERT INTO runs VALUES ('r', 0, NULL)")
    rng = random.Random(1)
    packed = sum(W1_BLOBS)
    cpu, wall = time.process_time(), time.perf_counter()
    for index in range(steps):
        conn.execute("BEGIN")
        if shape == "rows":
            conn.executemany("INSERT OR IGNORE INTO blobs VALUES (?, 4, 1000, ?)",
                             [(rng.randbytes(16), rng.randbytes(size)) for size in W1_BLOBS])
        elif shape == "one-row":
            conn.execute("INSERT OR IGNORE INTO blobs VALUES (?, 4, 1000, ?)",
                         (rng.randbytes(16), rng.randbytes(packed)))
        conn.execute("INSERT INTO steps VALUES ('r', ?, ?, ?)",
                     (index, rng.randbytes(36).hex(), rng.randbytes(16)))
        conn.execute("UPDATE runs SET step_count = ?, chain_head = ? WHERE id = 'r'",
                     (index + 1, rng.randbytes(16)))
        conn.execute("COMMIT")
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    conn.close()
    return cpu / steps, wall / steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"SQLite transaction of one step, {args.steps} steps, {args.repeats} repeats "
          f"(load average {os.getloadavg()[0]:.1f}); µs per step")
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "layout.db")
        for page_size in (16384, 4096):
            figures: dict[str, list[tuple[float, float]]] = {shape: [] for shape in SHAPES}
            for _ in range(args.repeats):
                for shape in SHAPES:
                    figures[shape].append(run(shape, args.steps, page_size, path))
            base = statistics.median(cpu for cpu, _ in figures["rows"])
            print(f"{page_size // 1024} kB pages:")
            for shape, runs in figures.items():
                cpus = [cpu * 1e6 for cpu, _ in runs]
                walls = [wall * 1e6 for _, wall in runs]
                print(f"  {shape:<9} cpu min {min(cpus):6.1f} med {statistics.median(cpus):6.1f}"
                      f"  wall min {min(walls):6.1f} med {statistics.median(walls):6.1f}"
                      f"  cpu/rows {statistics.median(cpus) / (base * 1e6):4.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
