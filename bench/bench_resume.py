"""Benchmark: resuming a waiting run with 1,000 prior steps and 100 effects, against the
program's own compute up to the wait (issue 17).

Target: the resume (``snap.resume``: a child process replays the run to its ``waiting`` step
with every effect served, journals the answer, continues live to the end) takes at most 2x
the program's own compute time up to the wait. The program is ``bench_replay.py``'s — per step
``--work-ms`` of pure-Python work and a growing memory of small dicts, every tenth step an
effect with ``--latency-ms`` of latency — followed by ``wait_for("go")`` and one last step.

Figures, wall-clock and CPU seconds (user + system) of child processes, min and median of
``--repeats`` (each resume continues a fresh copy of the recorded waiting run):
- baseline: the program unrecorded (``SNAPSTATE_DISABLE=1``), effects instant, stopping where
  the wait would be — its own compute, interpreter start included;
- record: the program recorded up to the wait (it exits 75);
- resume: ``snap.resume(copy, answer="go")``, end to end.

Usage: ``python bench/bench_resume.py [--steps 1000] [--effects 100] [--work-ms 1.0]
[--repeats 5]``. Prints the figures and the ratios; exit 0 either way (figures, not a test).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_replay import PROGRAM as REPLAY_PROGRAM, calibrate, child_cpu  # noqa: E402

PROGRAM = REPLAY_PROGRAM.replace('''        step += 1

main()''', '''        step += 1
    if os.environ.get("BENCH_STOP") == "1":
        return  # the baseline: the program's own compute up to the wait
    answer = snap.wait_for("go", prompt="go on?")
    snap.checkpoint("answered", answer=answer)

main()''')
assert PROGRAM != REPLAY_PROGRAM, "bench_replay.PROGRAM changed shape"


def run(args: list[str], env: dict[str, str], expect: int = 0) -> tuple[float, float]:
    """Run ``python args``; (wall seconds, CPU seconds); exits unless it returns ``expect``."""
    cpu, started = child_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        raise SystemExit(f"bench: {args[0]} exited {done.returncode}:\n{done.stderr}")
    return elapsed, child_cpu() - cpu


def spread(values: list[float]) -> str:
    return f"{min(values):6.3f} / {statistics.median(values):6.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--effects", type=int, default=100)
    parser.add_argument("--work-ms", type=float, default=1.0)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()

    import snapstate_capture as snap

    with tempfile.TemporaryDirectory(prefix="bench-resume-") as scratch:
        program = Path(scratch) / "program.py"
        program.write_text(PROGRAM)
        path, side = Path(scratch) / "bench.snap", Path(scratch) / "side.txt"
        loops = calibrate(options.work_ms)
        argv = [str(program), str(path), str(side), str(options.steps), str(options.effects),
                str(loops), str(options.latency_ms)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        baseline = [run(argv, {**env, "SNAPSTATE_DISABLE": "1", "BENCH_INSTANT": "1",
                               "BENCH_STOP": "1"}) for _ in range(options.repeats)]
        recorded = run(argv, env, expect=snap.EXIT_PAUSED)
        effects_run = len(side.read_text().splitlines())
        with snap.open_timeline(path) as timeline:
            steps = len(timeline.runs[-1].steps)
        resumed, inner = [], []
        for i in range(options.repeats):
            copy = Path(scratch) / f"copy{i}.snap"
            shutil.copy(path, copy)
            cpu, started = child_cpu(), time.perf_counter()
            result = snap.resume(copy, answer="go", trust=True, capture_output=True)
            resumed.append((time.perf_counter() - started, child_cpu() - cpu))
            inner.append(float(result.get("seconds") or 0))
            if result.get("fork_status") != "finished":
                raise SystemExit(f"bench: the resume did not finish: {result.get('message')}")
        assert len(side.read_text().splitlines()) == effects_run, "a resume ran an effect"
    walls, cpus = [w for w, _ in baseline], [c for _, c in baseline]
    r_walls, r_cpus = [w for w, _ in resumed], [c for _, c in resumed]
    print(f"run: {steps} steps before the wait, {effects_run} effects, {options.work_ms} ms "
          f"work per step; {options.repeats} repeats; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("                                   wall min / median    CPU min / median")
    print(f"baseline (unrecorded, to the wait):  {spread(walls)} s      {spread(cpus)} s")
    print(f"record (to the wait, exit 75):       {recorded[0]:6.3f} s               "
          f"{recorded[1]:6.3f} s")
    print(f"resume (replay + answer + finish):   {spread(r_walls)} s      {spread(r_cpus)} s"
          f"   (replay in the child: {spread(inner)} s wall)")
    ratio = statistics.median(r_walls) / statistics.median(walls)
    cpu_ratio = statistics.median(r_cpus) / statistics.median(cpus)
    best = min(r_walls) / min(walls)
    print(f"resume / baseline: {ratio:.2f}x wall (median), {best:.2f}x wall (min), "
          f"{cpu_ratio:.2f}x CPU (median); target <= 2.00x: "
          f"{'met' if cpu_ratio <= 2.0 else 'NOT met'} on CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
