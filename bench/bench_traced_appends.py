"""Benchmark: call tracing of a loop that appends to lists while it calls a function per element
(issue 19: "one that changed costs about its changed part"), the commonest shape of a script's
or a test's main loop.

The workload (``workload`` below, run as a child process) builds ``--sizes`` rows: each turn
calls a small function and appends one dict to ``rows`` and one string to ``names``, so every
call step catches the caller up with two lists one element longer. Each configuration runs
in a fresh interpreter, ``--repeats`` times, interleaved: ``plain`` (no recording) and
``calls`` (``snap.record(trace="calls")``), and ``empty``, a recording of no rows (the
recorder's start and end, its writer process). Figures: wall seconds of the child and CPU seconds
of it and of the trace writer process it leaves behind (waited for here, Linux
``PR_SET_CHILD_SUBREAPER``: ``bench_capture_cost.adopt_orphans``), min and median, the ratio of
the medians to plain's, CPU per call step (``calls`` minus ``empty``, over the steps), and the
file's size.

``--texts N`` adds the other common shape: a caller holding a list it does not change — a
function called per word of a 200-word text (``terms``), N texts — where each call's
catch-up looks at the unchanged list again (201 calls, 402 steps per text).

Usage: ``python bench/bench_traced_appends.py [--sizes 1000,3000] [--texts 100]
[--repeats 3]``. Exit 0 either way (figures, not a test).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_capture_cost import adopt_orphans, timed_process  # noqa: E402

WORKLOAD = '''import sys
import snapstate_capture as snap


def label(i):
    return f"row {i}"


def build(n):
    rows, names = [], []
    for i in range(n):
        name = label(i)
        rows.append({"i": i, "name": name, "tags": ["a", "b"]})
        names.append(name)
    return len(rows)


def stem(word):
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def terms(text):
    words = text.split()
    return [stem(word) for word in words]


def read(n):
    text = " ".join(["running", "jumped", "cats", "dog", "houses"] * 40)
    for _ in range(n):
        terms(text)


work = read if sys.argv[3:] == ["words"] else build
n = int(sys.argv[2])
if sys.argv[1] == "-":
    work(n)
else:
    with snap.record(sys.argv[1], trace="calls"):
        work(n)
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,3000")
    parser.add_argument("--texts", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    adopted = adopt_orphans()
    print(f"traced appends, {args.repeats} repeats; load average {os.getloadavg()[0]:.1f}"
          + ("" if adopted else " (writer CPU not counted: no child subreaper here)"))
    print(f"{'case':>10} {'mode':6} {'wall min':>9} {'wall med':>9} {'cpu min':>8} "
          f"{'cpu med':>8} {'wall x':>7} {'cpu x':>7} {'us/step':>8} {'file MB':>8}")
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / "appends.py"
        script.write_text(WORKLOAD)
        env_home = {"XDG_CONFIG_HOME": work}  # the recorder's key goes here, not ~
        os.environ.update(env_home)
        cases = [(int(size), 2 * int(size), []) for size in args.sizes.split(",")]
        if args.texts:
            cases.append((args.texts, 402 * args.texts, ["words"]))
        for size, steps, extra in cases:
            runs: dict[str, list[tuple[float, float]]] = {"plain": [], "empty": [], "calls": []}
            path = Path(work) / f"run-{size}.snap"
            for _ in range(args.repeats):
                for mode in runs:
                    for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                        stale.unlink(missing_ok=True)
                    target = "-" if mode == "plain" else str(path)
                    rows = 0 if mode == "empty" else size
                    runs[mode].append(timed_process(
                        [sys.executable, str(script), target, str(rows), *extra], cwd=work))
            plain_wall = statistics.median(w for w, _ in runs["plain"])
            plain_cpu = statistics.median(c for _, c in runs["plain"])
            empty_cpu = statistics.median(c for _, c in runs["empty"])
            label = f"{size} texts" if extra else f"{size} rows"
            for mode, figures in runs.items():
                walls, cpus = [w for w, _ in figures], [c for _, c in figures]
                per_step = (statistics.median(cpus) - empty_cpu) / steps * 1e6 \
                    if mode == "calls" else 0.0
                size_mb = path.stat().st_size / 1e6 if mode == "calls" else 0.0
                print(f"{label:>10} {mode:6} {min(walls):9.3f} {statistics.median(walls):9.3f} "
                      f"{min(cpus):8.3f} {statistics.median(cpus):8.3f} "
                      f"{statistics.median(walls) / plain_wall:7.1f} "
                      f"{statistics.median(cpus) / plain_cpu:7.1f} {per_step:8.1f} "
                      f"{size_mb:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
