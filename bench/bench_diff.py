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

Targets: W1 ≤ 10 ms, 100k dicts ≤ 50 ms, aligning two 10,000-step runs ≤ 1 s.
"""

from __future__ import annotations

import argparse
import copy
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
    a = {f"key{i}": i for i in range(100_000)}
    b = dict(a)
    for key in random.Random(1).sample(sorted(a), 10):
        b[key] = -1
    return a, b


def median_ms(func: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _hold(messages: Any = None, plan: Any = None, scratchpad: Any = None, counter: Any = None,
          table: Any = None) -> None:
    snap.checkpoint("state")


def record_states(path: Path, a: dict[str, Any], b: dict[str, Any]) -> None:
    """A run of two checkpoints whose innermost frame holds the states' parts as locals."""
    with snap.record(str(path), name="states"):
        _hold(**a)
        _hold(**b)


def file_diffs(path: Path, repeat: int) -> tuple[float, float]:
    """(preview ms, full-values ms) of diffing the two recorded steps, fresh reader each time
    (no cache carried between repeats)."""
    def once(options: DiffOptions) -> None:
        with snap.open_timeline(path, trust=options.trust) as timeline:
            steps = timeline.run().steps
            StepDiffer(options).diff(steps[0], steps[1])
    return (median_ms(lambda: once(DiffOptions()), repeat),
            median_ms(lambda: once(DiffOptions(full_values=True, trust=True)), repeat))


def _long_work(steps: int, skip_from: int, skip_to: int, extra: frozenset) -> None:
    total = 0
    for i in range(steps):
        total += i
        if skip_from <= i < skip_to:
            continue
        if i in extra:
            snap.checkpoint("retry")
        snap.checkpoint(f"tick {(i * 7) % 4}")


def record_long_run(path: str, steps: int, skip_from: int, skip_to: int, extra: frozenset
                    ) -> None:
    """A run of about ``steps`` checkpoints; steps in ``[skip_from, skip_to)`` left out, a
    ``retry`` step inserted before each index in ``extra``. Module-level functions and plain
    arguments only, so each step captures a few small locals."""
    with snap.record(path, name="long"):
        _long_work(steps, skip_from, skip_to, extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, 2,000-step runs")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    rows: list[tuple[str, float, float, float, float, str]] = []
    folder = Path(tempfile.mkdtemp(prefix="snapstate-bench-diff-"))

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
        base = median_ms(lambda: DeepDiff(a, b), max(repeat // 2, 2))
        ours = median_ms(lambda: diff_objects(a, b), repeat)
        path = folder / f"{name.split()[0]}-{len(rows)}.snap"
        record_states(path, a, b)
        preview, full = file_diffs(path, repeat)
        verdict = "met" if ours <= target else "MISSED"
        rows.append((name, base, ours, preview, full, f"≤ {target:g} ms: {verdict}"))

    print("diff of two states (median ms; machine shared and loaded: figures are noisy)")
    print(f"{'workload':<30}{'DeepDiff':>10}{'ours':>9}{'ratio':>8}{'file:preview':>14}"
          f"{'file:full':>11}  target (in memory)")
    for name, base, ours, preview, full, verdict in rows:
        print(f"{name:<30}{base:>10.1f}{ours:>9.1f}{ours / base:>8.3f}{preview:>14.1f}"
              f"{full:>11.1f}  {verdict}")

    steps = 2_000 if args.quick else 10_000
    path_a, path_b = folder / "long-a.snap", folder / "long-b.snap"
    start = time.perf_counter()
    record_long_run(str(path_a), steps, 0, 0, frozenset())
    record_long_run(str(path_b), steps, steps // 2, steps // 2 + 40,
                    frozenset(random.Random(3).sample(range(steps), 25)))
    recorded = time.perf_counter() - start
    with snap.open_timeline(path_a) as ta, snap.open_timeline(path_b) as tb:
        run_a, run_b = ta.run(), tb.run()
        read = median_ms(lambda: ([signature(s) for s in run_a.steps],
                                  [signature(s) for s in run_b.steps]), 3)
        sig_a = [signature(s) for s in run_a.steps]
        sig_b = [signature(s) for s in run_b.steps]
        aligned = median_ms(lambda: align(sig_a, sig_b), repeat)
        whole = median_ms(lambda: diff_runs(run_a, run_b), 3)
        result = diff_runs(run_a, run_b)
    print()
    print(f"alignment of two {steps:,}-step runs (recorded in {recorded:.1f} s)")
    print(f"  read signatures {read:8.1f} ms   align {aligned:8.1f} ms   "
          f"diff_runs (read + align + compare states) {whole:8.1f} ms")
    print(f"  counts {result.counts()}  regions {len(result.regions) + result.more_regions}  "
          f"target ≤ 1000 ms (read + align): "
          f"{'met' if read + aligned <= 1000 else 'MISSED'}; diff_runs: "
          f"{'met' if whole <= 1000 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
