"""Diff speed (issue 8, point 5), side by side with plain DeepDiff of the same two states.

    python bench/bench_diff.py [--quick]

Prints, per workload, the median time of plain ``DeepDiff(a, b)`` and of SnapState's diff of
the same two states: in memory (``diff_objects``, the "full values" walk), and from a timeline
file (``StepDiffer``: previews by default; ``--full --trust`` mode including unpickling), then
the ratio. Workloads:

- W1 (the bench workload of issue 7): messages = N chat dicts with ~500-character content,
  plan = 20 dicts, scratchpad = 100 keys, counter; state k vs k+1 (one message appended, one
  plan status, one scratchpad key and the counter changed), N = 200 and 1,200.
- Two 100,000-entry dicts differing in 10 values.
- Alignment of two recorded 10,000-step runs (25 steps inserted, 40 deleted): ``align`` on
  signatures, and the whole ``diff_runs`` (reading steps, aligning, comparing states).

Targets: W1 ≤ 10 ms, 100k dicts ≤ 50 ms, aligning two 10,000-step runs ≤ 1 s; issue 19: the
100k dicts' diff *from the file* finding all 10 changes ≤ 50 ms, and ``diff_runs`` of the two
10,000-step runs end to end (both files opened afresh) ≤ 1 s. Every measurement is also
printed as CPU and wall, min and median of its repeats.
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deepdiff import DeepDiff  # noqa: E402

import snapstate_capture as snap  # noqa: E402
from snapstate_inspect.model.alignment import align, diff_runs, signature  # noqa: E402
from snapstate_inspect.model.diff import StepDiffer  # noqa: E402
from snapstate_inspect.model.value_diff import DiffOptions, diff_objects  # noqa: E402


def w1_state(messages: int, k: int) -> dict[str, Any]:
    """W1 after step ``k`` with ``messages`` chat messages."""
    rng = random.Random(messages)
    words = ["alpha", "beta", "gamma", "delta", "tool", "call", "result", "plan"]
    return {
        "messages": [{"role": "user" if i % 2 else "assistant",
                      "content": " ".join(rng.choice(words) for _ in range(85))[:500]}
                     for i in range(messages)],
        "plan": [{"id": i, "task": f"task {i}", "status": "done" if i < k else "todo"}
                 for i in range(20)],
        "scratchpad": {f"note{i}": (f"value {i} at {k}" if i == k % 100 else f"value {i}")
                       for i in range(100)},
        "counter": k,
    }


def big_dicts() -> tuple[dict[str, int], dict[str, int]]:
    """Two 100,000-entry dicts differing in 10 values spread across the dict: recorded, they
    are 391 chunks of 256 pairs in 7 group manifests, and the changes fall in 10 different
    chunks of 6 groups (68, 93, 100, 156, 246, 256, 267, 301, 339, 389) — the hard case for
    the chunk-level diff, not one chunk or the root."""
    a = {f"key{i}": i for i in range(100_000)}
    b = dict(a)
    for key in random.Random(1).sample(sorted(a), 10):
        b[key] = -1
    return a, b


_TIMES: dict[str, tuple[list[float], list[float]]] = {}


def median_ms(func: Callable[[], Any], repeat: int, name: str | None = None) -> float:
    """Median wall ms of ``repeat`` calls; with ``name``, the CPU and wall times of every call
    are kept for ``timing_lines``."""
    walls, cpus = [], []
    for _ in range(repeat):
        cpu, start = time.process_time(), time.perf_counter()
        func()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    if name is not None:
        _TIMES[name] = (cpus, walls)
    return statistics.median(walls) * 1000


def timing_lines() -> list[str]:
    """CPU and wall, min and median (ms), of every named measurement."""
    out = []
    for name, (cpus, walls) in _TIMES.items():
        out.append(f"  {name:<44} cpu min {min(cpus) * 1e3:8.1f} med "
                   f"{statistics.median(cpus) * 1e3:8.1f}   wall min {min(walls) * 1e3:8.1f} "
                   f"med {statistics.median(walls) * 1e3:8.1f}  ({len(cpus)} repeats)")
    return out


def _hold(messages: Any = None, plan: Any = None, scratchpad: Any = None, counter: Any = None,
          table: Any = None) -> None:
    snap.checkpoint("state")


def record_states(path: Path, a: dict[str, Any], b: dict[str, Any]) -> None:
    """A run of two checkpoints whose innermost frame holds the states' parts as locals."""
    with snap.record(str(path), name="states"):
        _hold(**a)
        _hold(**b)


def file_diffs(path: Path, repeat: int, name: str) -> tuple[float, float, int, int]:
    """(preview ms, full-values ms, changes found by each) of diffing the two recorded steps,
    opening the file again each time (no cache carried between repeats)."""
    found: dict[bool, int] = {}

    def once(options: DiffOptions) -> None:
        with snap.open_timeline(path, trust=options.trust) as timeline:
            steps = timeline.run().steps
            result = StepDiffer(options).diff(steps[0], steps[1])
            found[options.full_values] = sum(len(var.changes) for _, var in result.variables())
    preview = median_ms(lambda: once(DiffOptions()), repeat, f"{name}: file, previews")
    full = median_ms(lambda: once(DiffOptions(full_values=True, trust=True)), repeat,
                     f"{name}: file, full values")
    return preview, full, found[False], found[True]


#: The deep value the two long runs hold: B's differs at one leaf for a stretch of steps.
CONFIG = {"model": "m1", "limits": {"tools": [{"name": "search",
                                               "options": {"depth": 3, "retries": 2}}]}}
CONFIG_DEEP = {"model": "m1", "limits": {"tools": [{"name": "search",
                                                    "options": {"depth": 4, "retries": 2}}]}}


def _long_work(steps: int, skip_from: int, skip_to: int, extra: frozenset, deep_from: int,
               deep_to: int) -> None:
    total = 0
    notes = {f"n{k}": k for k in range(8)}
    for i in range(steps):
        total += i
        if skip_from <= i < skip_to:
            continue
        if i in extra:
            snap.checkpoint("retry")
        notes = {**notes, f"n{i % 8}": i}
        config = CONFIG_DEEP if deep_from <= i < deep_to else CONFIG
        snap.checkpoint(f"turn {i // 100} tick {(i * 7) % 4}")
        del config


def record_long_run(path: str, steps: int, skip_from: int, skip_to: int, extra: frozenset,
                    deep: tuple[int, int] = (0, 0)) -> None:
    """A run of about ``steps`` checkpoints of an agent-like loop (turns of 100 steps whose
    labels repeat: ``turn T tick K``); steps in ``[skip_from, skip_to)`` left out, a ``retry``
    step inserted before each index in ``extra``, and in ``[deep[0], deep[1])`` the ``config``
    local differs from the other run's at one leaf four levels down. Each step's innermost
    frame holds a few scalars, a small dict changed every step (``notes``) and ``config``:
    two such runs mostly match pair by pair, and some pairs differ."""
    with snap.record(path, name="long"):
        _long_work(steps, skip_from, skip_to, extra, *deep)


def bench_states(repeat: int, folder: Path, verdicts: list[str]) -> None:
    """W1 and the 100k-entry dicts: DeepDiff, ``diff_objects`` and the file diffs."""
    rows: list[tuple[str, float, float, float, float, str]] = []
    workloads = []
    for messages in (200, 1_200):
        workloads.append((f"W1 {messages} messages", w1_state(messages, 5),
                          w1_state(messages, 6), 10.0))
    a, b = big_dicts()
    workloads.append(("100k-entry dicts, 10 differ", {"table": a}, {"table": b}, 50.0))
    for name, a, b, target in workloads:
        if "W1" in name:
            # Separate objects, as two loaded checkpoints are (DeepDiff skips shared ones).
            b["messages"] = copy.deepcopy(a["messages"]) + [{"role": "user",
                                                             "content": "one more"}]
        base = median_ms(lambda: DeepDiff(a, b), max(repeat // 2, 2), f"{name}: DeepDiff")
        ours = median_ms(lambda: diff_objects(a, b), repeat, f"{name}: diff_objects")
        path = folder / f"{name.split()[0]}-{len(rows)}.snap"
        record_states(path, a, b)
        preview, full, seen, seen_full = file_diffs(path, repeat, name)
        verdict = "met" if ours <= target else "MISSED"
        rows.append((name, base, ours, preview, full, f"≤ {target:g} ms: {verdict}"))
        if "100k" in name:
            best = min(t for t, n in ((preview, seen), (full, seen_full)) if n >= 10) \
                if max(seen, seen_full) >= 10 else None
            verdicts.append(
                f"100k-entry dicts from the file: previews find {seen} change(s) in "
                f"{preview:.1f} ms, full values {seen_full} in {full:.1f} ms (median wall); "
                f"all 10 within 50 ms: "
                f"{'met' if best is not None and best <= 50 else 'MISSED'}")

    print(f"diff of two states (median wall ms; load average {os.getloadavg()[0]:.1f} on 2 "
          "cores, shared: figures are noisy)")
    print(f"{'workload':<30}{'DeepDiff':>10}{'ours':>9}{'ratio':>8}{'file:preview':>14}"
          f"{'file:full':>11}  target (in memory)")
    for name, base, ours, preview, full, verdict in rows:
        print(f"{name:<30}{base:>10.1f}{ours:>9.1f}{ours / base:>8.3f}{preview:>14.1f}"
              f"{full:>11.1f}  {verdict}")


def bench_runs(steps: int, repeat: int, folder: Path, verdicts: list[str]) -> None:
    """Two recorded ``steps``-step runs: signatures, alignment, ``diff_runs`` with the files
    open and end to end (both opened afresh), and once the careful path (every pair asked
    of ``same_state`` alone) for the figure before, checked to give the same result."""
    path_a, path_b = folder / "long-a.snap", folder / "long-b.snap"
    start = time.perf_counter()
    record_long_run(str(path_a), steps, 0, 0, frozenset())
    record_long_run(str(path_b), steps, steps // 2, steps // 2 + 40,
                    frozenset(random.Random(3).sample(range(steps), 25)),
                    (steps * 7 // 10, steps * 7 // 10 + 300))
    recorded = time.perf_counter() - start
    with snap.open_timeline(path_a) as ta, snap.open_timeline(path_b) as tb:
        run_a, run_b = ta.run(), tb.run()
        read = median_ms(lambda: ([signature(s) for s in run_a.steps.summaries(0, steps * 2)],
                                  [signature(s) for s in run_b.steps.summaries(0, steps * 2)]),
                         3, "runs: read signatures (warm)")
        sig_a = [signature(s) for s in run_a.steps]
        sig_b = [signature(s) for s in run_b.steps]
        aligned = median_ms(lambda: align(sig_a, sig_b), repeat, "runs: align signatures")
        warm = median_ms(lambda: diff_runs(run_a, run_b), 3, "runs: diff_runs, files open")
        result = diff_runs(run_a, run_b)

    def end_to_end(fast: bool = True) -> Any:
        with snap.open_timeline(path_a) as ta, snap.open_timeline(path_b) as tb:
            return diff_runs(ta.run(), tb.run(), fast=fast).to_json()
    whole = median_ms(end_to_end, max(repeat, 5),
                      "runs: open both files + diff_runs (end to end)")
    found = {}
    careful = median_ms(lambda: found.setdefault("careful", end_to_end(False)), 1,
                        "runs: end to end, careful path (before)")
    same = found["careful"] == end_to_end()
    print()
    print(f"alignment of two {steps:,}-step runs (recorded in {recorded:.1f} s; load average "
          f"{os.getloadavg()[0]:.1f})")
    print(f"  read signatures {read:8.1f} ms   align {aligned:8.1f} ms   "
          f"diff_runs with the files open {warm:8.1f} ms   end to end {whole:8.1f} ms   "
          f"careful path {careful:8.1f} ms (same result: {same})")
    print(f"  counts {result.counts()}  regions "
          f"{[(r.kind, r.a_start, r.a_end) for r in result.regions_all if r.kind == 'state']}"
          f" state + {sum(r.kind != 'state' for r in result.regions_all)} one-sided")
    verdicts.append(f"diff_runs of two {steps:,}-step runs end to end (open, read, align, "
                    f"compare states): {whole:.0f} ms median wall (target ≤ 1000): "
                    f"{'met' if whole <= 1000 else 'MISSED'}; the careful path "
                    f"{careful:.0f} ms, same result: {same}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, 2,000-step runs")
    parser.add_argument("--only", default="states,runs",
                        help="comma-separated parts: states (W1, 100k dicts), runs")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    parts = set(args.only.split(","))
    verdicts: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="snapstate-bench-diff-"))
    if "states" in parts:
        bench_states(repeat, folder, verdicts)
    if "runs" in parts:
        bench_runs(2_000 if args.quick else 10_000, repeat, folder, verdicts)
    print()
    print("CPU and wall per measurement (ms):")
    print("\n".join(timing_lines()))
    print()
    print("\n".join(verdicts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
