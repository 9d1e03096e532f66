"""A real loop recorded line by line: ``python bench/traced_loop.py OUT.snap ITERATIONS [EVERY]``.

The traced-run part of ``bench_inspector.py --traced`` (issue 20) records this file with
``snap.record(trace="lines")``: three line steps per iteration, so 333,334 iterations make a
1,000,000-step run. ``total`` changes at every iteration, ``phase`` every ``EVERY`` iterations
(default a seventh of them: for the million steps every 47,619 iterations, 142,857 steps, so
the next change of ``phase`` is always more than 100,000 steps away), and ``samples`` (a list,
stored as blobs) grows at each new phase. Prints the seconds it took.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import snapstate_capture as snap  # noqa: E402

def crunch(n: int, every: int) -> int:
    total = 0
    phase = "warm-up"
    samples = []
    for i in range(n):
        total += i * i
        if i % every == 0:
            phase, samples = f"phase {i // every}", [*samples, total]
    return total


def main() -> int:
    out, iterations = Path(sys.argv[1]), int(sys.argv[2])
    every = int(sys.argv[3]) if len(sys.argv) > 3 else max(iterations // 7, 1)
    started = time.perf_counter()
    with snap.record(out, name="traced-loop", trace="lines", include=[__file__]):
        crunch(iterations, every)
    print(f"recorded {iterations:,} iterations in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
