"""Issue 15: replaying a traced pyflakes run vs. recording it (target: replay ≤ 3× record).

    python bench/bench_replay_corpus.py [--file PATH | --lines N] [--repeats 3] [--replays 5]

Each repeat records ``tests/corpus/programs/lint.py FILE`` (pyflakes' checker on a real module:
by default the running interpreter's own ``copy.py``, 304 lines on 3.11; ``--lines N`` lints a
generated N-line module instead) with ``snapstate record --trace calls --include '*/site-packages/pyflakes/*'`` and
replays the recording ``--replays`` times (every replay must say "no divergence"; the first
``--repeats`` replays are timed). The baseline is the same program run by plain python in the
same run. Wall and CPU time (children's user+system) per command; min and median of the repeats;
ratios replay/record and record/plain. Prints the load average: figures on a shared machine
are noisy.
"""

from __future__ import annotations

import argparse
import copy
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "tests" / "corpus" / "programs" / "lint.py"


def _timed(args: list[str], cwd: Path) -> tuple[float, float, str]:
    """Run ``args``; return (wall s, CPU s of the children, stdout). Raises on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=copy.__file__, help="module to lint")
    parser.add_argument("--lines", type=int, default=None, help="lint a generated module")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replays", type=int, default=5, help="replays of the first recording")
    args = parser.parse_args()
    snapstate = [sys.executable, "-m", "snapstate_inspect"]
    figures: dict[str, list[tuple[float, float]]] = {"plain": [], "record": [], "replay": []}
    steps = "?"
    target = str(args.lines) if args.lines else args.file
    with open(args.file, encoding="utf-8") as file:
        size = f"{args.lines}-line generated" if args.lines else f"{sum(1 for _ in file)}-line"
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        for repeat in range(args.repeats):
            wall, cpu, _ = _timed([sys.executable, str(PROGRAM), target], work)
            figures["plain"].append((wall, cpu))
            out = work / f"r{repeat}.snap"
            wall, cpu, _ = _timed([*snapstate, "record", "--trace", "calls", "--include",
                                   "*/site-packages/pyflakes/*", "-o", str(out), str(PROGRAM),
                                   target], work)
            figures["record"].append((wall, cpu))
        first = work / "r0.snap"
        for replay in range(max(args.replays, args.repeats)):
            wall, cpu, text = _timed([*snapstate, "replay", str(first), "--trust"], work)
            if "no divergence" not in text:
                raise SystemExit(f"replay {replay + 1} diverged:\n{text[-3000:]}")
            steps = text.rsplit("replayed ", 1)[-1].split(" ", 1)[0]
            if replay < args.repeats:
                figures["replay"].append((wall, cpu))
    print(f"pyflakes on a {size} file ({target}), {steps} traced steps; "
          f"{max(args.replays, args.repeats)} replays, all without divergence")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'':8} {'wall min':>9} {'wall med':>9} {'cpu min':>9} {'cpu med':>9}")
    for name, rows in figures.items():
        walls, cpus = [w for w, _ in rows], [c for _, c in rows]
        print(f"{name:8} {min(walls):9.2f} {statistics.median(walls):9.2f} "
              f"{min(cpus):9.2f} {statistics.median(cpus):9.2f}")
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in figures.items()}
    print(f"replay / record: wall {med['replay'][0] / med['record'][0]:.2f}x, "
          f"cpu {med['replay'][1] / med['record'][1]:.2f}x (target ≤ 3x)")
    print(f"record / plain:  wall {med['record'][0] / med['plain'][0]:.1f}x, "
          f"cpu {med['record'][1] / med['plain'][1]:.1f}x")


if __name__ == "__main__":
    main()
