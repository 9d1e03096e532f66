"""Benchmark: replaying a traced run against recording it (issue 15: traced replay ≤ 3× record).

A traced run is replayed by recording it again into a scratch timeline while a follower
thread compares it, per lineage, with the recording (``replay/traced_compare.py``). This
measures, for a CPU-bound program traced with ``--trace calls`` (recursive ``fib``: many short
calls, a deep stack):

- record: ``snapstate record --trace calls`` of the program;
- replay: ``snapstate replay --trust`` of that recording (no divergence expected);

as wall-clock and CPU seconds (user + system of the child processes), min and median of
``--repeats`` runs, and the replay/record ratio of the medians. The load average is printed:
on a shared machine compare ratios, not times.

Usage: ``python bench/bench_replay_traced.py [--repeats 3] [--depth 14] [--rounds 12]``.
Prints the figures; exit 0 either way (figures, not a test).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FIB = """
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

total = 0
for k in range({rounds}):
    total += fib({depth})
print(total)
"""


def _timed(command: list[str], cwd: str) -> tuple[float, float]:
    """Run ``command``; (wall seconds, CPU seconds of the children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _case(name: str, program: str, repeats: int) -> None:
    record_times, replay_times = [], []
    with tempfile.TemporaryDirectory(prefix="bench-traced-") as scratch:
        script = Path(scratch, f"{name}.py")
        script.write_text(program)
        for n in range(repeats):
            out = str(Path(scratch, f"{name}-{n}.snap"))
            record_times.append(_timed([sys.executable, "-m", "snapstate_inspect", "record",
                                        "--trace", "calls", "-o", out, str(script)], scratch))
            replay_times.append(_timed([sys.executable, "-m", "snapstate_inspect", "replay",
                                        out, "--trust", "--quiet"]
                                       if _has_quiet() else
                                       [sys.executable, "-m", "snapstate_inspect", "replay",
                                        out, "--trust"], scratch))
    for label, times in (("record", record_times), ("replay", replay_times)):
        walls, cpus = [t[0] for t in times], [t[1] for t in times]
        print(f"{name:<8} {label:<7} wall min {min(walls):6.2f} s  median "
              f"{statistics.median(walls):6.2f} s   cpu min {min(cpus):6.2f} s  median "
              f"{statistics.median(cpus):6.2f} s")
    ratio_wall = statistics.median(t[0] for t in replay_times) / statistics.median(
        t[0] for t in record_times)
    ratio_cpu = statistics.median(t[1] for t in replay_times) / statistics.median(
        t[1] for t in record_times)
    print(f"{name:<8} replay/record: wall {ratio_wall:.2f}x  cpu {ratio_cpu:.2f}x  "
          f"(target <= 3x)")


def _has_quiet() -> bool:
    done = subprocess.run([sys.executable, "-m", "snapstate_inspect", "replay", "--help"],
                          capture_output=True, text=True, env={**os.environ,
                                                                "PYTHONPATH": str(ROOT)})
    return "--quiet" in done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--depth", type=int, default=14, help="fib(N) per round")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    _case("fib", FIB.format(depth=args.depth, rounds=args.rounds), args.repeats)


if __name__ == "__main__":
    main()
