"""Inspector benchmark (issue 4, point 6): open time, memory and key latency on 1,000,000 steps.

    python bench/bench_inspector.py [--steps N] [--file PATH] [--keys ROUNDS]

Makes (once) a synthetic timeline with ``make_big_timeline.py`` and a 1,000-step baseline file,
then, for each, starts a fresh child process that imports the app, opens the file and drives
the real ``SnapStateApp`` headless at 160x45 with Textual's Pilot. Prints:

- open: seconds from the child's start (before importing anything) to the first complete screen
  (timeline, stack, source and variables drawn), and the child's peak RSS in MB;
- keys: per navigation key, the median and worst time from pressing it until every panel shows
  the new step (selection moved, variables loaded, screen painted);
- big values: the same for moving onto the step holding a 10 MB string, a 1,000,000-element
  list and a hostile 200,000-child preview, and the longest event-loop stall meanwhile (a
  ticker task measures it: a stall is a time the UI could not react);
- background: key latency while a search and a variable-history scan run over the whole run.

Targets: open <= 1 s, RSS <= 300 MB, keys <= 50 ms, no stall that freezes the UI. Ratios
against the 1,000-step baseline show the cost does not grow with the run's length. The machine
these figures come from may be shared; the baseline is measured in the same run for that reason.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # noqa: E402 - child start, before any import

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KEYS = ["n", "n", "p", "o", "O", "c", "C", "x", "X", "left_square_bracket",
        "right_square_bracket", "greater_than_sign", "less_than_sign", "pagedown", "pagedown"]


async def _settled(app, pilot, timeout: float = 10.0) -> None:
    """Wait until the selection's panels are filled (variables loaded) and painted."""
    screen = app.screen
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        sel = app.selection
        loaded = getattr(screen, "_loaded_for", None)
        if sel is not None and loaded is not None and loaded[0] == sel:
            break
        await asyncio.sleep(0.001)
    await pilot.pause()


class Ticker:
    """Measures the event loop's longest stall: a task that wakes every 5 ms."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            self.worst = max(self.worst, now - last - 0.005)
            last = now

    def start(self) -> None:
        self.worst = 0.0
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> float:
        if self._task:
            self._task.cancel()
        return self.worst


async def _child(path: str, rounds: int) -> dict:
    import snapstate_capture as snap
    from snapstate_inspect.app import SnapStateApp

    out: dict = {}
    reader = snap.open_timeline(path)
    app = SnapStateApp(reader)
    async with app.run_test(size=(160, 45)) as pilot:
        await _settled(app, pilot)
        out["open_s"] = time.perf_counter() - _T0
        out["open_cpu_s"] = time.process_time()  # CPU of this process since it started
        out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out["steps"] = app.step_count()
        await app.workers.wait_for_complete()
        # navigation keys, from the middle of the run
        app.go(app.step_count() // 2, jump=True)
        await _settled(app, pilot)
        timings: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        ticker = Ticker()
        ticker.start()
        for _ in range(rounds):
            for key in KEYS:
                started, started_cpu = time.perf_counter(), time.thread_time()
                await pilot.press(key)
                await _settled(app, pilot)
                timings.setdefault(key, []).append(time.perf_counter() - started)
                cpu.setdefault(key, []).append(time.thread_time() - started_cpu)
        out["stall_keys_s"] = ticker.stop()
        out["keys"] = {k: (statistics.median(v), max(v), statistics.median(cpu[k]))
                       for k, v in timings.items()}
        all_keys = [t for v in timings.values() for t in v]
        all_cpu = [t for v in cpu.values() for t in v]
        out["keys_median_s"] = statistics.median(all_keys)
        out["keys_p95_s"] = sorted(all_keys)[int(len(all_keys) * 0.95) - 1]
        out["cpu_median_s"] = statistics.median(all_cpu)
        out["cpu_p95_s"] = sorted(all_cpu)[int(len(all_cpu) * 0.95) - 1]
        # big values in main's frame at step 0 (only in the generated file)
        if out["steps"] > 10:
            ticker.start()
            started = time.perf_counter()
            app.go(0, jump=True)
            await _settled(app, pilot, timeout=60)
            out["big_step_s"] = time.perf_counter() - started
            out["big_stall_s"] = ticker.stop()
        # keys while a search and a history scan run in the background
        from snapstate_inspect.model.values import VariableKey
        app.go(app.step_count() // 3, jump=True)
        await _settled(app, pilot)
        screen = app.screen
        app.start_search("zzz-not-there")
        screen._change_worker(VariableKey(0, "main", "i"), app.selection.step, False)
        busy, busy_cpu = [], []
        ticker.start()
        for _ in range(rounds):
            for key in ("n", "p", "o"):
                started, started_cpu = time.perf_counter(), time.thread_time()
                await pilot.press(key)
                await _settled(app, pilot)
                busy.append(time.perf_counter() - started)
                busy_cpu.append(time.thread_time() - started_cpu)
        out["busy_cpu_s"] = statistics.median(busy_cpu)
        out["stall_busy_s"] = ticker.stop()
        out["busy_median_s"] = statistics.median(busy)
        out["busy_max_s"] = max(busy)
        app.workers.cancel_all()
    return out


def _measure(path: Path, rounds: int) -> dict:
    result = subprocess.run([sys.executable, __file__, "--child", str(path), "--keys",
                             str(rounds)], capture_output=True, text=True, timeout=900,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    if result.returncode != 0:
        raise SystemExit(f"child failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _ensure(path: Path, steps: int) -> None:
    if path.exists():
        return
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_big_timeline.py"), str(path),
                    str(steps)], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--file", type=Path, default=None)
    parser.add_argument("--keys", type=int, default=5, help="rounds of the key list")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.child, args.keys))))
        return 0
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / "snapstate-bench"
    folder.mkdir(exist_ok=True)
    big = args.file or folder / f"inspector-{args.steps}.snap"
    small = folder / "inspector-1000.snap"
    _ensure(big, args.steps)
    _ensure(small, 1000)
    base = _measure(small, args.keys)
    load = os.getloadavg()[0]
    result = _measure(big, args.keys)
    ms = 1000
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} (shared machine: "
          "figures are noisy)")
    for name, r in (("baseline 1,000 steps", base), (f"{result['steps']:,} steps", result)):
        print(f"{name}: open {r['open_s']:.2f} s (CPU {r['open_cpu_s']:.2f} s), peak RSS {r['rss_mb']:.0f} MB, keys median "
              f"{r['keys_median_s'] * ms:.0f} ms, p95 {r['keys_p95_s'] * ms:.0f} ms "
              f"(UI-thread CPU per key median {r['cpu_median_s'] * ms:.0f} ms, p95 "
              f"{r['cpu_p95_s'] * ms:.0f} ms), longest stall {r['stall_keys_s'] * ms:.0f} ms")
    print("per key on the big file (wall median / worst, UI-thread CPU median; ms):")
    for key, (median, worst, cpu) in result["keys"].items():
        print(f"  {key:<22} {median * ms:6.0f} {worst * ms:6.0f} {cpu * ms:6.0f}")
    if "big_step_s" in result:
        print(f"step with 10 MB string + 1M list + 200k-child preview: panels filled in "
              f"{result['big_step_s']:.2f} s, longest event-loop stall "
              f"{result['big_stall_s'] * ms:.0f} ms")
    print(f"keys during background search + change scan: median "
          f"{result['busy_median_s'] * ms:.0f} ms, worst {result['busy_max_s'] * ms:.0f} ms, "
          f"UI-thread CPU {result['busy_cpu_s'] * ms:.0f} ms, "
          f"longest stall {result['stall_busy_s'] * ms:.0f} ms")
    print(f"ratios big/baseline: open {result['open_s'] / base['open_s']:.2f}x, RSS "
          f"{result['rss_mb'] / base['rss_mb']:.2f}x, key median "
          f"{result['keys_median_s'] / base['keys_median_s']:.2f}x")
    for label, value, limit in (("open", result["open_s"], 1.0),
                                ("open CPU", result["open_cpu_s"], 1.0),
                                ("peak RSS MB", result["rss_mb"], 300),
                                ("key median wall", result["keys_median_s"], 0.05),
                                ("key UI-thread CPU p95", result["cpu_p95_s"], 0.05)):
        print(f"target {label}: {value:.3f} <= {limit}: {'met' if value <= limit else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
