"""Benchmark: the cost of recording each framework example (issue 16: at most 1.2x plain).

For each example in ``examples/`` (LangGraph, pydantic-ai, the OpenAI Agents SDK), two figures
of one whole run of the agent, measured in this run, each repeated ``--repeats`` times:

- plain: ``python -m examples.NAME`` (the framework integrations never turn on);
- recorded: ``python -m examples.NAME --out FILE`` (the agent inside ``snap.record``: model
  and tool calls as effects, every framework boundary a checkpoint).

A child process each time, as a user runs it: wall-clock and CPU seconds (user + system,
steadier on a loaded machine), min and median, and the recorded/plain ratio of each. The
weather service answers at once; the model is the example's fake one, so the figures are the
framework's own work plus capture — the worst case for the ratio (a real model call takes
seconds, capture the same milliseconds).

Bytecode is cached as on a user's machine (``pip install`` compiles it; Python writes it on
first import): the children run without ``PYTHONDONTWRITEBYTECODE`` (set on our CI machines),
with ``PYTHONPYCACHEPREFIX`` in a temporary directory (nothing written into the checkout), and
one unmeasured run of each mode comes first. Without the cache every run compiles SnapState's
sources again (~0.2 s, ~10% of these runs), a cost a user pays once.

Usage: ``python bench/bench_frameworks.py [--repeats 5] [--only langgraph_agent]``. Prints the
table; exit 0 either way (figures, not a test).
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
EXAMPLES = ("langgraph_agent", "pydantic_ai_agent", "openai_agents_agent")


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One child ``python args``: (wall seconds, CPU seconds)."""
    cpu, started = child_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return elapsed, child_cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", action="append", choices=EXAMPLES)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SNAPSTATE_EXAMPLE_COUNTS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"load average {os.getloadavg()[0]:.1f}; {args.repeats} repeats; seconds "
          "(min / median)")
    print(f"{'example':22} {'plain wall':>13} {'recorded wall':>15} {'ratio':>6}   "
          f"{'plain cpu':>12} {'recorded cpu':>14} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        for name in args.only or EXAMPLES:
            run(["-m", f"examples.{name}"], env)  # warm-up: bytecode written, files cached
            run(["-m", f"examples.{name}", "--out", str(Path(tmp) / f"{name}-warm.snap")], env)
            plain, recorded = [], []
            for i in range(args.repeats):  # interleaved: load drifts hit both alike
                plain.append(run(["-m", f"examples.{name}"], env))
                recorded.append(run(["-m", f"examples.{name}", "--out",
                                     str(Path(tmp) / f"{name}-{i}.snap")], env))
            cells = []
            for index in (0, 1):
                a = [p[index] for p in plain]
                b = [r[index] for r in recorded]
                ratio = statistics.median(b) / statistics.median(a)
                cells.append(f"{min(a):5.2f} / {statistics.median(a):5.2f} "
                             f"{min(b):6.2f} / {statistics.median(b):5.2f} {ratio:6.2f}")
            print(f"{name:22} {cells[0]}   {cells[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
