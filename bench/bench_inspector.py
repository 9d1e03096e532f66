"""Inspector benchmark (issue 4, point 6): open time, memory and key latency on 1,000,000 steps.

    python bench/bench_inspector.py [--steps N] [--file PATH] [--keys ROUNDS] [--profile OUT]
    python bench/bench_inspector.py --traced [--steps N] [--repeat R]   # traced runs (issue 20)
    python bench/bench_inspector.py --store-runs [--repeat R]  # a store's runs screen (issue 18)

Makes (once) a synthetic timeline with ``make_big_timeline.py`` and a 1,000-step baseline file,
then, for each, starts a fresh child process that imports the app, opens the file and drives
the real ``SnapStateApp`` headless at 160x45 with Textual's Pilot. Prints:

- open: seconds from the child's start (before importing anything) to the first frame the app
  draws with the complete first screen (timeline, stack, source and variables of the first step
  drawn; frames timed as for the keys, below), the CPU spent by then (the UI thread's, and the
  whole process's), and the child's peak RSS in MB. Also shown, for reference: the time until
  the test harness saw the app settled and idle (``Pilot.pause`` waits for 20 ms without CPU,
  so background work started after the first screen, like the run plot, counts there);
- keys: per navigation key, the latency from sending the key event to the first frame the app
  draws once every panel shows the new step (selection moved, variables loaded), median and
  worst, and the UI thread's CPU time over the same span. Frames are timed where Textual hands
  them to the terminal (``App._display``, still called headless); the key event is sent as
  ``Pilot.press`` sends it, but without its idle waits;
- harness floor: what ``Pilot.press`` plus waiting for the app to settle costs for a key bound
  to nothing. Pilot waits for idleness in 20 ms sleeps, so its wall time (the figure this bench
  printed before, still shown per key as "harness") is mostly the harness, not the app;
- big values: the latency of ``<`` from the middle of the run onto step 0, which holds a 10 MB
  string, a 1,000,000-element list and a hostile 200,000-child preview, with the preview cache
  emptied first (a first visit), and the longest event-loop stall meanwhile (a ticker task
  measures it: a stall is a time the UI could not react);
- background: key latency while a search (for text that is nowhere, so it reads the whole run)
  and a change scan (of ``config``, which never changes, so it scans to the end) run in worker
  threads.

Targets: open <= 1 s, RSS <= 300 MB, key latency median and p95 <= 50 ms (alone and during the
background scans), no stall that freezes the UI. Ratios against the 1,000-step baseline show
the cost does not grow with the run's length. The machine these figures come from may be
shared; the baseline is measured in the same run for that reason. ``--profile OUT`` writes a
cProfile of the big file's key loop (read it with ``python -m pstats OUT``).
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

NOT_MOVED_S = 1.0  # a key that has not moved the selection by then is taken as one that won't
KEYS = ["n", "n", "p", "o", "O", "c", "C", "v", "V", "x", "X", "left_square_bracket",
        "right_square_bracket", "greater_than_sign", "less_than_sign", "pagedown", "pagedown"]


async def _settled(app, pilot, timeout: float = 10.0) -> None:
    """Wait until the selection's panels are filled (variables loaded) and painted."""
    screen = app.screen
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if _is_settled(app, screen):
            break
        await asyncio.sleep(0.001)
    await pilot.pause()


def _is_settled(app, screen) -> bool:
    """Every panel shows the selection: the variables of ``app.selection`` are loaded."""
    sel = app.selection
    loaded = getattr(screen, "_loaded_for", None)
    return sel is not None and loaded is not None and loaded[0] == sel


class FrameClock:
    """Timestamps every frame the app draws, with what it showed.

    Textual renders a frame (``Screen._compositor_refresh``) and hands it to ``App._display``,
    which writes it to the terminal; in a headless ``run_test`` it is still called and only the
    writing is skipped, so wrapping it times real frames. Each entry: ``(wall, UI-thread CPU,
    selection, settled)`` where settled means every panel showed that selection; ``process_cpu``
    holds the whole process's CPU time at each frame. Made before the app runs, it sees the
    first frame too.
    """

    def __init__(self, app) -> None:
        self.frames: list[tuple[float, float, object, bool]] = []
        self.process_cpu: list[float] = []
        original = app._display

        def display(screen, renderable) -> None:
            original(screen, renderable)
            if renderable is None or app._batch_count or screen is not app.screen:
                return  # nothing drawn
            self.frames.append((time.perf_counter(), time.thread_time(), app.selection,
                                _is_settled(app, screen)))
            self.process_cpu.append(time.process_time())

        app._display = display

    def first_complete(self) -> tuple[float, float, float] | None:
        """(wall, UI-thread CPU, process CPU) of the first frame with every panel settled."""
        for position, (wall, cpu, shown, settled) in enumerate(self.frames):
            if settled and shown is not None:
                return wall, cpu, self.process_cpu[position]
        return None

    def first_settled(self, since: int, selection) -> tuple[float, float] | None:
        """(wall, CPU) of the first frame after index ``since`` showing ``selection`` settled."""
        for wall, cpu, shown, settled in self.frames[since:]:
            if shown == selection and settled:
                return wall, cpu
        return None


def _send_key(app, key: str) -> None:
    """Send one key event the way ``App._press_keys`` (behind ``Pilot.press``) does, without
    its idle waits."""
    import unicodedata

    from textual import events
    from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key

    if len(key) == 1 and not key.isalnum():
        key = _character_to_key(key)
    try:
        char = unicodedata.lookup(_get_unicode_name_from_key(REPLACED_KEYS.get(key, key)))
    except KeyError:
        char = key if len(key) == 1 else None
    event = events.Key(key, char)
    event.set_sender(app)
    app._driver.send_message(event)


async def _key(app, pilot, clock: FrameClock, key: str,
               timeout: float = 10.0) -> tuple[float, float, float]:
    """Press ``key``; return (latency, UI-thread CPU, harness wall), in seconds.

    latency: from sending the key event to the first frame drawn after every panel showed the
    new selection (for a key that does not move, the first frame drawn after it: its status
    note). CPU: the UI thread's CPU time over that span. Until that frame the bench only polls
    (1 ms sleeps): it forces no frame and waits for no idleness, so every frame counted is one
    the app drew by itself. harness wall: then waiting as ``Pilot.press`` does until the app is
    idle again (idle waits quantised in 20 ms sleeps: the old figure, kept for comparison).
    """
    before = app.selection
    since = len(clock.frames)
    started, started_cpu = time.perf_counter(), time.thread_time()
    _send_key(app, key)
    found = None
    while time.perf_counter() - started < timeout:
        await asyncio.sleep(0.001)
        if app.selection != before:
            found = clock.first_settled(since, app.selection)
            if found is not None:
                break
        elif time.perf_counter() - started > NOT_MOVED_S and len(clock.frames) > since:
            found = clock.frames[since][:2]  # did not move: the first frame after the key
            break
    await pilot.pause()
    await _settled(app, pilot)
    harness = time.perf_counter() - started
    if found is None:  # nothing drawn in time: count the whole wait (an upper bound)
        return harness, time.thread_time() - started_cpu, harness
    return found[0] - started, found[1] - started_cpu, harness


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


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(int(len(ordered) * 0.95) - 1, 0)]


def _profiler(path: str | None):
    """A running ``cProfile.Profile`` when ``--profile`` asked for one (None otherwise)."""
    if not path:
        return None
    import cProfile

    profile = cProfile.Profile()
    profile.enable()
    return profile


async def _child(path: str, rounds: int, profile_to: str | None = None) -> dict:
    import snapstate_capture as snap
    from snapstate_inspect.app import SnapStateApp

    out: dict = {}
    reader = snap.open_timeline(path)
    app = SnapStateApp(reader)
    clock = FrameClock(app)  # from the first frame on: when did the first screen appear?
    async with app.run_test(size=(160, 45)) as pilot:
        await _settled(app, pilot)
        out["open_harness_s"] = time.perf_counter() - _T0
        out["open_harness_cpu_s"] = time.process_time()  # CPU of this process since it started
        first = clock.first_complete()
        if first is None:  # nothing drawn settled: the harness figure is an upper bound
            first = (_T0 + out["open_harness_s"], time.thread_time(), time.process_time())
        out["open_s"] = first[0] - _T0
        out["open_ui_cpu_s"], out["open_cpu_s"] = first[1], first[2]
        out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out["steps"] = app.step_count()
        await app.workers.wait_for_complete()
        # the harness floor: an unbound key through Pilot.press (no handler, no frame)
        floor = []
        for _ in range(5):
            started = time.perf_counter()
            await pilot.press("f19")
            await _settled(app, pilot)
            floor.append(time.perf_counter() - started)
        out["floor_s"] = statistics.median(floor)
        # navigation keys, from the middle of the run
        app.go(app.step_count() // 2, jump=True)
        await _settled(app, pilot)
        latency: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        harness: dict[str, list[float]] = {}
        ticker = Ticker()
        ticker.start()
        profile = _profiler(profile_to)
        for _ in range(rounds):
            for key in KEYS:
                took, used, waited = await _key(app, pilot, clock, key)
                latency.setdefault(key, []).append(took)
                cpu.setdefault(key, []).append(used)
                harness.setdefault(key, []).append(waited)
        if profile is not None:
            profile.disable()
            profile.dump_stats(profile_to)
        out["stall_keys_s"] = ticker.stop()
        out["keys"] = {k: (statistics.median(v), max(v), statistics.median(cpu[k]),
                           statistics.median(harness[k])) for k, v in latency.items()}
        all_keys = [t for v in latency.values() for t in v]
        all_cpu = [t for v in cpu.values() for t in v]
        out["keys_median_s"] = statistics.median(all_keys)
        out["keys_p95_s"] = _p95(all_keys)
        out["keys_max_s"] = max(all_keys)
        out["cpu_median_s"] = statistics.median(all_cpu)
        out["cpu_p95_s"] = _p95(all_cpu)
        out["harness_median_s"] = statistics.median(t for v in harness.values() for t in v)
        # big values in main's frame at step 0 (only in the generated file)
        if out["steps"] > 10:
            app.go(app.step_count() // 2, jump=True)
            await _settled(app, pilot)
            app.loader.clear()  # a first visit: the big previews are read and decoded again
            ticker.start()
            out["big_step_s"], _, _ = await _key(app, pilot, clock, "less_than_sign")
            out["big_stall_s"] = ticker.stop()
        # keys while a search and a history scan run in the background
        from snapstate_inspect.model.values import VariableKey
        app.go(app.step_count() // 3, jump=True)
        await _settled(app, pilot)
        screen = app.screen
        app.start_search("zzz-not-there")
        screen._change_worker(VariableKey(0, "main", "config"), app.selection.step, False)
        busy, busy_cpu = [], []
        ticker.start()
        for _ in range(rounds):
            for key in ("n", "p", "o"):
                took, used, _ = await _key(app, pilot, clock, key)
                busy.append(took)
                busy_cpu.append(used)
        out["busy_cpu_s"] = statistics.median(busy_cpu)
        out["stall_busy_s"] = ticker.stop()
        out["busy_median_s"] = statistics.median(busy)
        out["busy_p95_s"] = _p95(busy)
        out["busy_max_s"] = max(busy)
        app.workers.cancel_all()
    return out


def _measure(path: Path, rounds: int, profile: str | None = None) -> dict:
    extra = ["--profile", profile] if profile else []
    result = subprocess.run([sys.executable, __file__, "--child", str(path), "--keys",
                             str(rounds), *extra], capture_output=True, text=True, timeout=900,
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
    parser.add_argument("--profile", default=None, metavar="OUT",
                        help="cProfile the big file's key loop into OUT (pstats format)")
    parser.add_argument("--traced", action="store_true",
                        help="the traced-run figures instead (search, v/V and history on a run "
                             "recorded line by line from a real loop: inspector_traced.py)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="--traced: repeats of each figure (min and median printed)")
    parser.add_argument("--store-runs", action="store_true",
                        help="the runs screen on a PostgreSQL store of 100,000 runs against "
                             "10 instead (inspector_store_runs.py)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--store-runs-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--traced-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.child, args.keys, args.profile))))
        return 0
    if args.store_runs_child:
        import inspector_store_runs

        inspector_store_runs.main_child(args.store_runs_child)
        return 0
    if args.store_runs:
        import inspector_store_runs

        return inspector_store_runs.report(args.repeat)
    if args.traced_child:
        import inspector_traced

        print(json.dumps(asyncio.run(inspector_traced.child(args.traced_child, args.repeat))))
        return 0
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / "snapstate-bench"
    folder.mkdir(exist_ok=True)
    if args.traced:
        import inspector_traced

        return inspector_traced.report(args.steps, args.repeat, folder)
    big = args.file or folder / f"inspector-{args.steps}.snap"
    small = folder / "inspector-1000.snap"
    _ensure(big, args.steps)
    _ensure(small, 1000)
    base = _measure(small, args.keys)
    load = os.getloadavg()[0]
    result = _measure(big, args.keys, args.profile)
    ms = 1000
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} (shared machine: "
          "figures are noisy)")
    for name, r in (("baseline 1,000 steps", base), (f"{result['steps']:,} steps", result)):
        print(f"{name}: open {r['open_s']:.2f} s (CPU: process {r['open_cpu_s']:.2f} s, UI "
              f"thread {r['open_ui_cpu_s']:.2f} s; the harness saw it settled and idle at "
              f"{r['open_harness_s']:.2f} s, CPU {r['open_harness_cpu_s']:.2f} s), peak RSS "
              f"{r['rss_mb']:.0f} MB, key latency median {r['keys_median_s'] * ms:.0f} ms, "
              f"p95 {r['keys_p95_s'] * ms:.0f} ms, worst {r['keys_max_s'] * ms:.0f} ms "
              f"(UI-thread CPU per key median {r['cpu_median_s'] * ms:.0f} ms, p95 "
              f"{r['cpu_p95_s'] * ms:.0f} ms), longest stall {r['stall_keys_s'] * ms:.0f} ms")
    print(f"harness floor: an unbound key through Pilot.press takes {result['floor_s'] * ms:.0f}"
          f" ms (idle waits in 20 ms sleeps); the keys' harness wall median is "
          f"{result['harness_median_s'] * ms:.0f} ms — not the app's time, shown for reference")
    print("per key on the big file (ms; latency = key sent -> first frame with every panel "
          "on the new step):")
    print(f"  {'key':<22} {'latency':>7} {'worst':>6} {'CPU':>6} {'harness':>8}")
    for key, (median, worst, cpu, wall) in result["keys"].items():
        print(f"  {key:<22} {median * ms:7.0f} {worst * ms:6.0f} {cpu * ms:6.0f} "
              f"{wall * ms:8.0f}")
    if "big_step_s" in result:
        print(f"'<' onto the step with a 10 MB string + 1M list + 200k-child preview (not "
              f"cached): panels filled in "
              f"{result['big_step_s']:.2f} s, longest event-loop stall "
              f"{result['big_stall_s'] * ms:.0f} ms")
    print(f"keys during background search + change scan: latency median "
          f"{result['busy_median_s'] * ms:.0f} ms, p95 {result['busy_p95_s'] * ms:.0f} ms, "
          f"worst {result['busy_max_s'] * ms:.0f} ms, UI-thread CPU "
          f"{result['busy_cpu_s'] * ms:.0f} ms, longest stall "
          f"{result['stall_busy_s'] * ms:.0f} ms")
    print(f"ratios big/baseline: open {result['open_s'] / base['open_s']:.2f}x, RSS "
          f"{result['rss_mb'] / base['rss_mb']:.2f}x, key latency median "
          f"{result['keys_median_s'] / base['keys_median_s']:.2f}x")
    for label, value, limit in (("open", result["open_s"], 1.0),
                                ("open CPU", result["open_cpu_s"], 1.0),
                                ("peak RSS MB", result["rss_mb"], 300),
                                ("key latency median", result["keys_median_s"], 0.05),
                                ("key latency p95", result["keys_p95_s"], 0.05),
                                ("key UI-thread CPU p95", result["cpu_p95_s"], 0.05),
                                ("key latency p95 during background scans",
                                 result["busy_p95_s"], 0.05)):
        print(f"target {label}: {value:.3f} <= {limit}: {'met' if value <= limit else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
