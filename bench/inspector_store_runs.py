"""The store part of ``bench_inspector.py`` (``--store-runs``, issue 18): the inspector's runs
screen on a PostgreSQL store of 100,000 runs against one of 10, in the same run.

A throwaway PostgreSQL server (``tests/store/pg_server.py``: initdb on a temporary directory,
Unix socket only) gets two databases filled through the engine's bulk insert
(``tests/store/many_runs.py``). For each, ``--repeat`` fresh child processes open the store
with the real ``SnapStateApp`` headless at 160x45 and measure:

- open: child start (before any import) to the runs screen on screen with its first rows
  drawn, wall and the process's CPU;
- end: the End key to the oldest run's row drawn (a jump to the far end: one offset look-up and
  one keyset page);
- filter: ``status:failed`` submitted in the filter box to its count shown;
- search: a word (``job-4242``) submitted to its count shown (a substring scan of every run).

Prints min and median of each, and the ratios 100,000 / 10. Target: open of 100,000 runs within
1.5x of 10 runs' (the list is read a page at a time).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


async def _until(pilot, condition, timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("the app did not get there")
        await pilot.pause(0.002)


async def child(url: str) -> dict:
    """Open ``url`` in the app and time the runs screen (see the module docstring)."""
    sys.path.insert(0, str(ROOT))
    import snapstate_capture as snap
    from snapstate_inspect.app import SnapStateApp
    from snapstate_inspect.screens.store_runs import StoreRunsScreen
    from snapstate_inspect.widgets.run_table import RunTable

    import __main__

    started = getattr(__main__, "_T0")  # bench_inspector.py's: the child's start
    reader = snap.open_timeline(url)
    app = SnapStateApp(reader)
    out: dict = {}

    def table():
        screen = app.screen
        return screen.query_one(RunTable) if isinstance(screen, StoreRunsScreen) else None

    def drawn(text: str) -> bool:
        found = table()
        return found is not None and any(
            text in found.render_line(y).text for y in range(found.size.height))

    def counted(text: str) -> bool:
        screen = app.screen
        return isinstance(screen, StoreRunsScreen) and text in str(
            screen.query_one("#store-runs-count").render())

    async with app.run_test(size=(160, 45)) as pilot:
        newest = reader.run().name
        await _until(pilot, lambda: drawn(newest))
        out["open_s"] = time.perf_counter() - started
        out["open_cpu_s"] = time.process_time()
        start = time.perf_counter()
        await pilot.press("end")
        await _until(pilot, lambda: drawn("job-0 "))
        out["end_s"] = time.perf_counter() - start
        failed = reader.run_count({"status": "failed"})
        for name, query, count in (("filter", "status:failed", failed),
                                   ("search", "job-4242", reader.run_count({"text": "job-4242"}))):
            box = app.screen.query_one("#store-runs-filter")
            box.value = query
            start = time.perf_counter()
            await pilot.press("slash", "enter")
            await _until(pilot, lambda: counted(f"{count:,} run"))
            out[f"{name}_s"] = time.perf_counter() - start
            box.value = ""
            await pilot.press("slash", "enter")
    reader.close()
    return out


def _measure(url: str, repeat: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {}
    for _ in range(repeat):
        done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_inspector.py"),
                               "--store-runs-child", url], capture_output=True, text=True,
                              timeout=600, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        for name, value in json.loads(done.stdout.strip().splitlines()[-1]).items():
            figures.setdefault(name, []).append(value)
    return figures


def report(repeat: int, runs: int = 100_000) -> int:
    """Fill the two stores, measure each ``repeat`` times, print the figures."""
    sys.path.insert(0, str(ROOT))
    from tests.store.many_runs import fill_runs
    from tests.store.pg_server import PgServer

    server = PgServer().start()
    try:
        small, big = server.create_database("runs10"), server.create_database("runs_big")
        fill_runs(small, 10)
        start = time.perf_counter()
        fill_runs(big, runs)
        filled = time.perf_counter() - start
        base, result = _measure(small, repeat), _measure(big, repeat)
    finally:
        server.stop()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared "
          f"machine: figures are noisy); {runs:,} runs inserted in {filled:.1f} s")
    print(f"runs screen on a PostgreSQL store, min / median of {repeat} (seconds):")
    print(f"  {'':12} {'10 runs':>17} {f'{runs:,} runs':>17} {'ratio (median)':>15}")
    for name in ("open_s", "open_cpu_s", "end_s", "filter_s", "search_s"):
        a, b = base[name], result[name]
        print(f"  {name[:-2]:12} {min(a):8.3f} {statistics.median(a):8.3f} "
              f"{min(b):8.3f} {statistics.median(b):8.3f} "
              f"{statistics.median(b) / statistics.median(a):14.2f}x")
    ratio = statistics.median(result["open_s"]) / statistics.median(base["open_s"])
    print(f"target open {runs:,} runs <= 1.5x open 10 runs: {ratio:.2f}x "
          f"{'met' if ratio <= 1.5 else 'NOT met'}")
    return 0


def main_child(url: str) -> None:
    print(json.dumps(asyncio.run(child(url))))
