"""The traced-run part of ``bench_inspector.py`` (``--traced``, issue 20): search, ``v``/``V`` and
the variable history on a run recorded line by line from a real loop (``traced_loop.py``).

For the big file (default 1,000,000 line steps) and a 10,000-step baseline made the same way,
a fresh child process drives the real ``SnapStateApp`` headless at 160x45 and measures, each
``--repeat`` times (min and median printed, wall time and the process's CPU time — the scans
run in worker threads):

- search: from ``start_search`` to the first hit shown in the app's search state and to the
  search's end, for a value that holds at 150,000 steps (``'phase 5'``) and for text that is
  nowhere (so every step is read);
- ``v`` from just after a change of ``phase`` to its next change (150,000 steps away) and ``V``
  back over the same distance: key sent to the first frame with every panel on the new step;
- ``h``: the history of ``phase`` over the whole run, from opening the screen to its last line
  ("N changes");
- keys (``n``, ``p``, page down/up) while a search and a change scan run in the background:
  median and p95 latency.

Targets: value search <= 2 s, ``v`` <= 1 s, history <= 3 s, key p95 <= 50 ms.
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
PHASE_QUERY = "phase 5"
NOWHERE = "zzz-not-there"
BUSY_KEYS = ["n", "p", "n", "pagedown", "pageup"]
#: Navigation keys timed from the middle of the run, and what each has to read there.
SEEK_KEYS = {"x": "no later exception, half the run", "X": "no earlier exception, half",
             "c": "no later call of crunch, half", "C": "the call of crunch at step 1"}


def ensure(path: Path, steps: int) -> None:
    """Record ``path`` from ``traced_loop.py`` (about ``steps`` line steps) unless it exists."""
    if path.exists():
        return
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "traced_loop.py"), str(path),
                           str(max(steps // 3, 10))], capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"recording the traced loop failed:\n{done.stderr[-2000:]}")
    print(done.stdout.strip())


async def _until(check, timeout: float = 120.0) -> float:
    started = time.perf_counter()
    while not check():
        if time.perf_counter() - started > timeout:
            raise SystemExit("the traced bench timed out waiting for the app")
        await asyncio.sleep(0.002)
    return time.perf_counter() - started


async def _search(app, query: str) -> tuple[float, float, float, int]:
    """(seconds to the first hit, seconds to the end, process CPU, hits)."""
    cpu = time.process_time()
    started = time.perf_counter()
    app.start_search(query)
    state = app.search
    first = None
    while not state.finished:
        if first is None and state.hits:
            first = time.perf_counter() - started
        await asyncio.sleep(0.002)
    end = time.perf_counter() - started
    return (first if first is not None else end), end, time.process_time() - cpu, len(state.hits)


async def _move(app, clock, key: str, target: int, timeout: float = 120.0) -> float:
    """Press ``key`` (``v``/``V``); seconds until the first frame with every panel on step
    ``target`` (``bench_inspector._key`` gives up after a second without a move: a far change
    on a loaded machine takes longer)."""
    from bench_inspector import _send_key

    since = len(clock.frames)
    started = time.perf_counter()
    _send_key(app, key)
    while time.perf_counter() - started < timeout:
        await asyncio.sleep(0.001)
        if app.selection is not None and app.selection.step == target:
            found = clock.first_settled(since, app.selection)
            if found is not None:
                return found[0] - started
    raise SystemExit(f"{key} did not reach step {target} in {timeout:.0f} s "
                     f"(at {app.selection.step})")


async def child(path: str, repeat: int) -> dict:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import snapstate_capture as snap
    from bench_inspector import FrameClock, Ticker, _key, _p95, _send_key, _settled  # noqa: F401
    from snapstate_inspect.app import SnapStateApp
    from snapstate_inspect.model.values import VariableKey
    from snapstate_inspect.model.var_history import Change, iter_changes
    from snapstate_inspect.screens.history import VariableHistoryScreen

    out: dict = {}
    reader = snap.open_timeline(path)
    run = reader.runs[-1]
    probe = run.steps[min(100, len(run.steps) - 1)]
    position = [f.function for f in probe.frames].index("crunch")
    phase = VariableKey(position, "crunch", "phase")
    changes = [c.step for c in iter_changes(run, phase, 0, len(run.steps))
               if isinstance(c, Change)]
    out["steps"], out["phase_changes"] = len(run.steps), len(changes)
    app = SnapStateApp(reader)
    clock = FrameClock(app)
    async with app.run_test(size=(160, 45)) as pilot:
        await _settled(app, pilot)
        await app.workers.wait_for_complete()
        for query in (PHASE_QUERY, NOWHERE):
            runs = [await _search(app, query) for _ in range(repeat)]
            out[f"search {query}"] = runs
        app.stop_search()
        app.variable = phase
        moves = {"v": [], "V": []}
        for k in range(repeat):
            pair = (len(changes) // 2 + k) % (len(changes) - 2) + 1
            for key, start, target in (("v", changes[pair] + 1, changes[pair + 1]),
                                       ("V", changes[pair + 1] - 1, changes[pair])):
                app.go(start, jump=True)
                await _settled(app, pilot)
                app.variable = phase
                cpu = time.process_time()
                took = await _move(app, clock, key, target)
                moves[key].append((took, time.process_time() - cpu, abs(target - start)))
                await _settled(app, pilot)
        out["moves"] = moves
        history = []
        for _ in range(repeat):
            app.variable = phase
            cpu = time.process_time()
            started = time.perf_counter()
            _send_key(app, "h")  # as a person presses it

            def finished() -> bool:
                screen = app.screen
                if not isinstance(screen, VariableHistoryScreen) or not screen.is_mounted:
                    return False
                label = str(screen.query_one("#history-progress").render())
                return label.endswith(" changes") and not label.startswith("scanning")
            await _until(finished)
            took = time.perf_counter() - started
            history.append((took, time.process_time() - cpu, len(app.screen.changes)))
            app.pop_screen()
            await _settled(app, pilot)
        out["history"] = history
        seeks: dict[str, list] = {}
        middle = len(run.steps) // 2
        for key in SEEK_KEYS:  # no exception anywhere, one call of crunch: whole-run scans
            seeks[key] = []
            for _ in range(repeat):
                app.go(middle, jump=True)
                await _settled(app, pilot)
                app.screen._note = ""  # the answer is a move or a new "no ..." note
                cpu = time.process_time()
                started = time.perf_counter()
                _send_key(app, key)

                def answered() -> bool:
                    note = getattr(app.screen, "_note", "")
                    return app.selection.step != middle or note.startswith("no ")
                await _until(answered)
                seeks[key].append((time.perf_counter() - started, time.process_time() - cpu,
                                   app.selection.step))
                await _settled(app, pilot)
        out["seeks"] = seeks
        app.go(len(run.steps) // 3, jump=True)
        await _settled(app, pilot)
        app.start_search(NOWHERE)
        app.screen._change_worker(VariableKey(position, "crunch", "n"), app.selection.step,
                                  False)
        busy, busy_cpu = [], []
        ticker = Ticker()
        ticker.start()
        for _ in range(max(repeat, 3)):
            for key in BUSY_KEYS:
                took, used, _ = await _key(app, pilot, clock, key)
                busy.append(took)
                busy_cpu.append(used)
        out["busy"] = {"median": statistics.median(busy), "p95": _p95(busy), "max": max(busy),
                       "cpu_median": statistics.median(busy_cpu), "stall": ticker.stop(),
                       "search_running": app.search.running}
        app.workers.cancel_all()
    reader.close()
    return out


def _measure(path: Path, repeat: int) -> dict:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_inspector.py"),
                           "--traced-child", str(path), "--repeat", str(repeat)],
                          capture_output=True, text=True, timeout=3600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _stats(values: list[float]) -> tuple[float, float]:
    return min(values), statistics.median(values)


def report(steps: int, repeat: int, folder: Path) -> int:
    big = folder / f"traced-{steps}.snap"
    small = folder / "traced-10000.snap"
    ensure(big, steps)
    ensure(small, 10_000)
    load = os.getloadavg()[0]
    base = _measure(small, repeat)
    result = _measure(big, repeat)
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end (shared machine: figures are noisy)")
    print(f"traced runs recorded from bench/traced_loop.py: {result['steps']:,} steps "
          f"(baseline {base['steps']:,}); phase changes {result['phase_changes']}")
    print(f"  {'figure':<44} {'min':>8} {'median':>8} {'CPU med':>8} {'baseline':>9} "
          f"{'ratio':>6}")
    rows = []
    for query in (PHASE_QUERY, NOWHERE):
        key = f"search {query}"
        for label, column in (("first hit", 0), ("finished", 1)):
            if query == NOWHERE and column == 0:
                continue
            values = [r[column] for r in result[key]]
            rows.append((f"search {query!r}: {label} (s)", values,
                         [r[2] for r in result[key]], [r[column] for r in base[key]]))
    for key in ("v", "V"):
        moves = result["moves"][key]
        distance = statistics.median(m[2] for m in moves)
        rows.append((f"{key} to a change {distance:,.0f} steps away (s)", [m[0] for m in moves],
                     [m[1] for m in moves], [m[0] for m in base["moves"][key]]))
    for key in SEEK_KEYS:
        rows.append((f"{key}: {SEEK_KEYS[key]} (s)", [m[0] for m in result["seeks"][key]],
                     [m[1] for m in result["seeks"][key]],
                     [m[0] for m in base["seeks"][key]]))
    rows.append((f"h: history of phase, whole run (s)", [h[0] for h in result["history"]],
                 [h[1] for h in result["history"]], [h[0] for h in base["history"]]))
    for label, values, cpu, baseline in rows:
        low, mid = _stats(values)
        base_mid = statistics.median(baseline)
        print(f"  {label:<44} {low:8.3f} {mid:8.3f} {statistics.median(cpu):8.3f} "
              f"{base_mid:9.3f} {mid / base_mid if base_mid else 0:5.1f}x")
    busy, base_busy = result["busy"], base["busy"]
    print(f"  keys {', '.join(BUSY_KEYS)} during a search and a change scan: median "
          f"{busy['median'] * 1000:.0f} ms, p95 {busy['p95'] * 1000:.0f} ms, worst "
          f"{busy['max'] * 1000:.0f} ms, UI-thread CPU median {busy['cpu_median'] * 1000:.0f} "
          f"ms, longest stall {busy['stall'] * 1000:.0f} ms (baseline p95 "
          f"{base_busy['p95'] * 1000:.0f} ms; search still running at the end: "
          f"{busy['search_running']})")
    targets = (("value search finished", statistics.median(r[1] for r in
                                                          result[f"search {PHASE_QUERY}"]), 2.0),
               ("v to the next change", statistics.median(m[0] for m in result["moves"]["v"]),
                1.0),
               ("history over the whole run", statistics.median(h[0] for h in
                                                               result["history"]), 3.0),
               ("key p95 during background scans", busy["p95"], 0.05))
    for label, value, limit in targets:
        print(f"target {label}: {value:.3f} <= {limit}: {'met' if value <= limit else 'NOT met'}")
    return 0
