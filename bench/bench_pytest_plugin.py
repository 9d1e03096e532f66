"""Benchmark: what ``pytest --snapstate`` adds to a passing suite (issue 21: at most 10% in
``calls`` mode on the project's example tests, ``examples/tests``).

Each repeat runs ``python -m pytest examples/tests`` in a child process three ways,
interleaved so that load on the machine hits them alike: without the plugin's option
(the baseline), with ``--snapstate`` (calls) and with ``--snapstate=lines``. Figures: wall-clock
seconds and CPU seconds (user + system of the child and of the processes it waited for; the
trace writer processes the recorder starts are not all waited for, so CPU undercounts them),
min and median over the repeats, and each mode's ratio to the baseline of the same run.

Bytecode is cached as on a user's machine (as in ``bench_frameworks.py``): the children run
without ``PYTHONDONTWRITEBYTECODE``, with ``PYTHONPYCACHEPREFIX`` in a temporary directory, and
one unmeasured run of each mode comes first.

``--trivial N`` measures instead a suite of N tests that each do almost nothing (written into a
temporary directory, which is the children's working directory, so the plugin traces them as
the user's code): what ``--snapstate`` costs each test whatever it does — starting and ending
a held recording, tracing pytest's own calls around the test — in milliseconds per test
beside the ratios.

Usage: ``python bench/bench_pytest_plugin.py [--repeats 5] [--tests examples/tests]
[--trivial 1000]``. Prints the table; exit 0 either way (figures, not a test).
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
MODES = {"off": [], "calls": ["--snapstate=calls"], "lines": ["--snapstate=lines"]}


TRIVIAL = """import pytest


@pytest.mark.parametrize("number", range({count}))
def test_next_number_is_larger(number):
    assert number + 1 > number
"""


def run_once(tests: str, extra: list[str], env: dict[str, str],
             cwd: Path = ROOT) -> tuple[float, float]:
    """(wall, cpu) seconds of one pytest run; raises when the suite does not pass."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *extra, tests], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"pytest {' '.join(extra)} failed:\n{done.stdout[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tests", default="examples/tests")
    parser.add_argument("--trivial", type=int, default=0, metavar="N",
                        help="measure a suite of N tests that do almost nothing instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as config:  # the recorder's key goes here, not ~
        env = {**os.environ, "XDG_CONFIG_HOME": config,
               "PYTHONPYCACHEPREFIX": str(Path(config) / "pycache"),
               "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get(
                   "PYTHONPATH", "")) if p)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        tests, cwd = args.tests, ROOT
        if args.trivial:
            cwd = Path(config) / "suite"
            cwd.mkdir()
            (cwd / "test_trivial.py").write_text(TRIVIAL.format(count=args.trivial))
            tests = "test_trivial.py"
        figures: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
        for extra in MODES.values():  # warm the file cache and write the bytecode
            run_once(tests, extra, env, cwd)
        for _ in range(args.repeats):
            for mode, extra in MODES.items():
                figures[mode].append(run_once(tests, extra, env, cwd))
    what = f"{args.trivial} trivial tests" if args.trivial else args.tests
    print(f"pytest {what}, {args.repeats} repeats; load average {os.getloadavg()[0]:.1f}")
    print(f"{'mode':<6} {'wall min':>9} {'wall med':>9} {'cpu min':>8} {'cpu med':>8} "
          f"{'wall ratio':>10} {'cpu ratio':>9}")
    base_wall = statistics.median(w for w, _ in figures["off"])
    base_cpu = statistics.median(c for _, c in figures["off"])
    for mode, runs in figures.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(f"{mode:<6} {min(walls):9.2f} {statistics.median(walls):9.2f} {min(cpus):8.2f} "
              f"{statistics.median(cpus):8.2f} {statistics.median(walls) / base_wall:10.2f} "
              f"{statistics.median(cpus) / base_cpu:9.2f}")
    if args.trivial:
        for mode in ("calls", "lines"):
            extra = (statistics.median(c for _, c in figures[mode]) - base_cpu) / args.trivial
            print(f"{mode}: {extra * 1e3:.2f} ms of CPU per test over 'off' (median)")
    print("ratios: median of the mode / median of 'off' in this run (target: calls <= 1.10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
