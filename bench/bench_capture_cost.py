"""Issue 19: what capture costs in the hard cases, in one run, with its "Done when" figures.

Run from the repository root::

    python bench/bench_capture_cost.py                      # everything (~10-20 min on 2 cores)
    python bench/bench_capture_cost.py --only w1 --lengths 1000,5000
    python bench/bench_capture_cost.py --only pyflakes --repeats 5
    python bench/bench_capture_cost.py --quick                # 1k/5k-step W1, 100k-step file

Every configuration runs in a fresh interpreter, ``--repeats`` times, interleaved (so load on a
shared machine hits them alike); each prints CPU and wall, min and median of the repeats, and
its ratio to the baseline measured in the same run. The baseline's lazy import of
``snapstate_capture`` (and of LangGraph) is paid before any timing starts.

- ``w1``: bench_storage's W1 (200 chat messages growing by one per step, a 20-item plan, a
  100-key scratchpad, a counter) recorded with ``snap.checkpoint()`` each step, at each of
  ``--lengths`` steps (1,000, 5,000 and 20,000): CPU per step (process time, all threads) of
  the first and last decile of steps, and their ratio (target at 20,000: last <= 1.5x first).
- ``w1dict``: W1 plus a 100-entry dict with one key set per step (target <= 0.4 ms of CPU per
  step over the plain loop, file <= 1.5 MB after 1,000 steps).
- ``w2dicts``: W1 plus an unchanged ~5 MB list of 10,000 dicts (target <= 1 ms per step).
- ``langgraph``: W1 as a LangGraph graph with ``messages`` in a ``DeltaChannel`` and the
  SqliteSaver, CPU per step over the same graph without a checkpointer, against SnapState's
  W1 CPU per step over the plain loop (target <= 0.5x).
- ``read``: a ``--read-steps`` (1,000,000) step file recorded by ``snap.record`` from a long
  agent loop (``long_agent``: real delta chains and chunk manifests), then opened cold in fresh
  processes: open time, and CPU and wall of reading 200 random steps' locals previews.
- ``pyflakes``: ``tests/corpus/programs/lint.py`` (pyflakes' checker on a generated module)
  plain, under ``snapstate record --trace calls --include '*/pyflakes/*'`` and under VizTracer
  (``bench`` extra), whole processes (the recording's CPU includes its trace writer process,
  which the recorder does not wait for: this process adopts and waits for it, Linux
  ``PR_SET_CHILD_SUBREAPER``): CPU ratios to plain, also with the interpreter's start-up
  and imports (``python -c 'import pyflakes.api'``) subtracted (target: calls <= 20x), and the
  CPU of one call step: the traced run minus a traced run with nothing to lint
  (``calls-empty``: the recorder's start, pyflakes' traced imports, the end) minus the linting,
  over the steps the linting added. ``--only pyflakes`` runs this part alone.

Bytecode is cached as on a user's machine (as in ``bench_frameworks.py``): children run without
``PYTHONDONTWRITEBYTECODE``, with ``PYTHONPYCACHEPREFIX`` in the bench's temporary directory, and
each pyflakes configuration runs once unmeasured first (without that, every traced run and its
writer process compiled SnapState's sources again, ~0.2 s each).

Exit 0 either way (figures, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_storage as storage  # noqa: E402  (the W1 workload, its inputs and LangGraph loop)

LINT = ROOT / "tests" / "corpus" / "programs" / "lint.py"
_STAMPS: list[tuple[float, float]] = []


# -- workloads (children) --------------------------------------------------------------------
def _records() -> list[dict[str, Any]]:
    rows = []
    for i in range(10_000):
        rows.append({"id": i, "name": f"record-{i:05d}", "tags": ["a", "b"][: i % 3],
                     "text": storage._text(storage.random.Random(i), 480)})
    return rows


def agent(messages: list, plan: list, scratchpad: dict, table: dict | None,
          records: list | None, steps: int) -> int:
    """W1's loop (``bench_storage.agent``) with the variant's extra state; one checkpoint a step."""
    import snapstate_capture as snap

    counter = 0
    while counter < steps:
        _STAMPS.append((time.process_time(), time.perf_counter()))
        storage.apply(storage._PENDING[counter], messages, plan, scratchpad)
        if table is not None:
            table[f"row{counter % 100}"] = counter
        counter += 1
        snap.checkpoint()
    _STAMPS.append((time.process_time(), time.perf_counter()))
    return counter


def _parts(variant: str, steps: int) -> tuple[list, list, dict, dict | None, list | None, int]:
    """The variant's state, built in a frame of its own: the recorded stack starts at
    ``run_workload``, whose locals must hold none of it (W1's state is the agent frame's)."""
    state = storage.initial_state("w1")
    table = {f"row{i}": i for i in range(100)} if variant == "w1dict" else None
    records = _records() if variant == "w2dicts" else None
    return (state["messages"], state["plan"], state["scratchpad"], table, records, steps)


def run_workload(variant: str, steps: int, capture: bool, path: str) -> dict[str, Any]:
    import snapstate_capture as snap

    snap.checkpoint()  # the lazy import of the capture package, paid before timing
    storage._prepare(steps)
    _STAMPS.clear()
    if capture:
        with snap.record(path, name=f"bench-{variant}"):
            agent(*_parts(variant, steps))
    else:
        agent(*_parts(variant, steps))
    cpu = [b[0] - a[0] for a, b in zip(_STAMPS, _STAMPS[1:])]
    wall = [b[1] - a[1] for a, b in zip(_STAMPS, _STAMPS[1:])]
    tenth = max(len(cpu) // 10, 1)
    size = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    return {"cpu_ms": sum(cpu) / steps * 1e3, "wall_ms": statistics.median(wall) * 1e3,
            "first_ms": sum(cpu[:tenth]) / tenth * 1e3, "last_ms": sum(cpu[-tenth:]) / tenth * 1e3,
            "bytes": size}


def run_langgraph(steps: int, mode: str, path: str) -> dict[str, Any]:
    import langgraph.graph  # noqa: F401  (imports paid before timing)

    cpu = time.process_time()
    wall = storage.loop_langgraph("w1", steps, mode, path)
    cpu = time.process_time() - cpu
    return {"cpu_ms": cpu / steps * 1e3, "wall_ms": statistics.median(wall) * 1e3,
            "bytes": os.path.getsize(path) if os.path.exists(path) else 0}


# -- the million-step file, read cold ----------------------------------------------------------
def long_agent(steps: int) -> int:
    """A long agent run with realistic delta chains: each step sets one of 100 scratchpad
    keys, appends a chat message (a new conversation, i.e. a new list, every 2,000 steps),
    keeps the last 500-character reply, toggles a plan item every 10 steps; one checkpoint a
    step. Its inputs come from a pool made before the loop (``_POOL``)."""
    import snapstate_capture as snap

    scratchpad = {f"key{i}": _POOL[i] for i in range(100)}
    plan = [{"id": i, "task": _POOL[i][:60], "status": "todo"} for i in range(20)]
    messages: list[dict[str, str]] = []
    reply = ""
    counter = 0
    while counter < steps:
        if counter % 2000 == 0:
            messages = []
        reply = _POOL[(counter * 7) % len(_POOL)]
        messages.append({"role": "assistant" if counter % 2 else "user", "content": reply})
        scratchpad[f"key{counter % 100}"] = _POOL[counter % len(_POOL)][:40]
        if counter % 10 == 0:
            item = plan[(counter // 10) % 20]
            item["status"] = "done" if item["status"] == "todo" else "todo"
        counter += 1
        snap.checkpoint()
    return counter


_POOL: list[str] = []


def build_long(steps: int, path: str) -> dict[str, Any]:
    import snapstate_capture as snap

    rng = storage.random.Random(19)
    _POOL[:] = [storage._text(rng, 500) for _ in range(5000)]
    cpu, wall = time.process_time(), time.perf_counter()
    with snap.record(path, name="long"):
        long_agent(steps)
    return {"build_cpu_s": time.process_time() - cpu, "build_wall_s": time.perf_counter() - wall,
            "bytes": os.path.getsize(path)}


def read_cold(path: str, samples: int = 200) -> dict[str, Any]:
    """In a fresh process: open the file, then read ``samples`` random steps' locals previews
    (every blob decoded through its delta chain), CPU and wall per sample."""
    import snapstate_capture as snap

    cpu, wall = time.process_time(), time.perf_counter()
    timeline = snap.open_timeline(path)
    run = timeline.runs[-1]
    total = len(run.steps)
    opened = (time.process_time() - cpu, time.perf_counter() - wall)
    rng = storage.random.Random(5)
    cpus, walls = [], []
    for _ in range(samples):
        index = rng.randrange(total)
        cpu, wall = time.process_time(), time.perf_counter()
        for frame in run.steps[index].frames:
            for value in frame.locals.values():
                value.preview  # noqa: B018 - the read being timed
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    timeline.close()
    return {"steps": total, "open_cpu_ms": opened[0] * 1e3, "open_wall_ms": opened[1] * 1e3,
            "cpu_ms": [c * 1e3 for c in cpus], "wall_ms": [w * 1e3 for w in walls]}


def bench_read(args: argparse.Namespace, workdir: str) -> list[str]:
    path = os.path.join(workdir, "long.snap")
    built = run_child("read:build", args.read_steps, workdir)
    if isinstance(built, str):
        return [f"read: build {built}"]
    lines = [f"a {args.read_steps:,}-step file recorded by snap.record (scratchpad, messages, "
             f"plan, reply: delta chains and chunk manifests), {built['bytes'] / 1e6:.1f} MB, "
             f"built in {built['build_wall_s']:.0f} s wall, "
             f"{built['build_cpu_s'] / args.read_steps * 1e3:.3f} ms CPU a step"]
    opens, cpus, walls = [], [], []
    for _ in range(args.repeats):
        result = run_child("read:cold", args.read_steps, workdir)
        if isinstance(result, str):
            return lines + [f"read: cold {result}"]
        opens.append((result["open_cpu_ms"], result["open_wall_ms"]))
        cpus += result["cpu_ms"]
        walls += result["wall_ms"]
    cpus.sort()
    walls.sort()
    p95 = int(len(cpus) * 0.95)
    lines.append(f"  opened cold in a fresh process ({args.repeats} processes): open cpu "
                 f"{_mm([o[0] for o in opens])} ms, wall {_mm([o[1] for o in opens])} ms")
    lines.append(f"  a random step's locals previews ({len(cpus)} reads): cpu median "
                 f"{statistics.median(cpus):.2f} p95 {cpus[p95]:.2f} max {cpus[-1]:.2f} ms; "
                 f"wall median {statistics.median(walls):.2f} p95 {walls[p95]:.2f} max "
                 f"{walls[-1]:.2f} ms")
    return lines


def child(config: str, steps: int, workdir: str) -> dict[str, Any]:
    kind, _, side = config.partition(":")
    if kind == "read":
        path = os.path.join(workdir, "long.snap")
        return build_long(steps, path) if side == "build" else read_cold(path)
    path = os.path.join(workdir, f"{kind}-{side}-{steps}.snap")
    for leftover in (path, path + "-wal", path + "-shm"):
        if os.path.exists(leftover):
            os.unlink(leftover)
    if kind == "langgraph":
        return run_langgraph(steps, side, path)
    return run_workload(kind, steps, side == "snapstate", path)


def run_child(config: str, steps: int, workdir: str) -> dict[str, Any] | str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, __file__, "--child", config, "--steps", str(steps),
                           "--workdir", workdir], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return "failed: " + ((done.stderr.strip().splitlines() or ["?"])[-1])
    return json.loads(done.stdout.strip().splitlines()[-1])


def adopt_orphans() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux
    ``PR_SET_CHILD_SUBREAPER``), so the trace writer process a traced recording starts — which
    the recorder does not wait for — is waited for here and its CPU counted with the
    recording's. False where that is not available (then the writer's CPU is left out)."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _reap_orphans() -> None:
    """Wait for every descendant handed to this process (``adopt_orphans``) to end."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def timed_process(args: list[str], cwd: str, said: list[str] | None = None
                  ) -> tuple[float, float]:
    """(wall, CPU of the child, of what it waited for and of the descendants it left behind:
    a trace writer process, see ``adopt_orphans``) of one command; its stderr is appended to
    ``said`` when given. Wall time ends when the command does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    _reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr[-800:]}")
    if said is not None:
        said.append(done.stderr)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# -- the parent ------------------------------------------------------------------------------
def _mm(values: list[float]) -> str:
    return f"min {min(values):8.3f} med {statistics.median(values):8.3f}"


def bench_workloads(args: argparse.Namespace, workdir: str) -> list[str]:
    lines, verdicts = [], []
    plans = []
    if "w1" in args.only:
        plans += [("w1", n) for n in args.lengths]
    if "w1dict" in args.only:
        plans.append(("w1dict", 1000))
    if "w2dicts" in args.only:
        plans.append(("w2dicts", 1000))
    if "langgraph" in args.only:
        plans.append(("langgraph", 1000))
    for kind, steps in plans:
        sides = (["none", "delta"] if kind == "langgraph" else ["baseline", "snapstate"])
        if kind == "langgraph":
            sides += ["w1:baseline", "w1:snapstate"]
        figures: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for _ in range(args.repeats):
            for side in sides:
                config = side if ":" in side else f"{kind}:{side}"
                result = run_child(config, steps, workdir)
                if isinstance(result, str):
                    lines.append(f"{kind} {side}: {result}")
                    break
                figures[side].append(result)
        if any(not runs for runs in figures.values()):
            continue
        lines.append(f"{kind}, {steps} steps, {args.repeats} repeats (ms per step):")
        for side, runs in figures.items():
            cpu = [r["cpu_ms"] for r in runs]
            wall = [r["wall_ms"] for r in runs]
            extra = ""
            if "first_ms" in runs[0]:
                extra = (f"  cpu first decile med {statistics.median(r['first_ms'] for r in runs):.3f}"
                         f" last decile med {statistics.median(r['last_ms'] for r in runs):.3f}")
            size = statistics.median(r["bytes"] for r in runs)
            lines.append(f"  {side:<13} cpu {_mm(cpu)}  wall median-step {_mm(wall)}"
                         f"  file {size / 1e6:.2f} MB{extra}")
        med = {side: statistics.median(r["cpu_ms"] for r in runs) for side, runs in figures.items()}
        if kind == "langgraph":
            ours = med["w1:snapstate"] - med["w1:baseline"]
            theirs = med["delta"] - med["none"]
            ratio = ours / theirs if theirs > 0 else float("inf")
            verdicts.append(f"W1 CPU overhead per step: SnapState {ours:.3f} ms, LangGraph "
                            f"DeltaChannel {theirs:.3f} ms: {ratio:.2f}x (target <= 0.5) "
                            f"{'met' if ratio <= 0.5 else 'MISSED'}")
            continue
        overhead = med["snapstate"] - med["baseline"]
        runs = figures["snapstate"]
        if kind == "w1":
            first = statistics.median(r["first_ms"] for r in runs)
            last = statistics.median(r["last_ms"] for r in runs)
            target = " (target <= 1.5 at 20,000)" if steps >= 20_000 else ""
            verdicts.append(f"W1 {steps}: overhead {overhead:.3f} ms CPU/step; last/first decile "
                            f"{last / first:.2f}x{target}"
                            + ((" met" if last / first <= 1.5 else " MISSED") if target else ""))
        elif kind == "w1dict":
            size = statistics.median(r["bytes"] for r in runs)
            ok = overhead <= 0.4 and size <= 1.5e6
            verdicts.append(f"W1 + dict: {overhead:.3f} ms CPU/step, {size / 1e6:.2f} MB "
                            f"(targets 0.4 ms, 1.5 MB) {'met' if ok else 'MISSED'}")
        else:
            verdicts.append(f"W2 unchanged list of dicts: {overhead:.3f} ms CPU/step (target <= 1) "
                            f"{'met' if overhead <= 1 else 'MISSED'}")
    return lines + ["", *verdicts]


def bench_pyflakes(args: argparse.Namespace, workdir: str) -> list[str]:
    writer = ("CPU counts the trace writer process" if adopt_orphans() else
              "CPU leaves the trace writer process out (no PR_SET_CHILD_SUBREAPER here)")
    python = sys.executable
    snapstate = str(Path(python).parent / "snapstate")

    def record(lines: int) -> list[str]:
        return [snapstate, "record", "--trace", "calls", "--include", "*/pyflakes/*", "-o",
                os.path.join(workdir, "lint.snap"), str(LINT), str(lines)]

    sides: dict[str, list[str]] = {
        "start-up": [python, "-c", "import pyflakes.api, pyflakes.reporter"],
        "plain": [python, str(LINT), str(args.lint_lines)],
        # the recorder's own start, pyflakes' traced imports and the end of the run, with
        # (almost) nothing to lint: subtracted from "calls" for the cost of one call step
        "calls-empty": record(0),
        "calls": record(args.lint_lines),
    }
    try:
        import viztracer  # noqa: F401

        sides["viztracer"] = [python, "-m", "viztracer", "--quiet", "-o",
                              os.path.join(workdir, "lint.json"), str(LINT), str(args.lint_lines)]
    except ImportError:
        print("(viztracer is not installed: pip install '.[bench]' to measure it alongside)")
    figures: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    steps: dict[str, int] = {}
    for repeat in range(-1, args.repeats):  # -1: the unmeasured run that writes the bytecode
        for side, command in sides.items():
            if side.startswith("calls"):
                for leftover in ("lint.snap", "lint.snap-wal", "lint.snap-shm"):
                    if os.path.exists(os.path.join(workdir, leftover)):
                        os.unlink(os.path.join(workdir, leftover))
            said: list[str] = []
            figure = timed_process(command, workdir, said)
            if repeat < 0:
                continue
            figures[side].append(figure)
            for line in said[0].splitlines():
                if line.startswith("snapstate: ") and " steps, " in line:
                    steps[side] = int(line.split()[1].replace(",", ""))
    lines = [f"pyflakes on a {args.lint_lines}-line module, {args.repeats} repeats, whole "
             f"processes (s; {writer}):"]
    start = statistics.median(c for _, c in figures["start-up"])
    plain = statistics.median(c for _, c in figures["plain"])
    for side, runs in figures.items():
        cpu = statistics.median(c for _, c in runs)
        counted = f"  {steps[side]:,} steps" if side in steps else ""
        lines.append(f"  {side:<11} cpu {_mm([c for _, c in runs])}  wall "
                     f"{_mm([w for w, _ in runs])}  cpu/plain {cpu / plain:6.2f}x  "
                     f"(start-up subtracted {(cpu - start) / max(plain - start, 1e-3):7.2f}x)"
                     f"{counted}")
    calls = statistics.median(c for _, c in figures["calls"])
    empty = statistics.median(c for _, c in figures["calls-empty"])
    ratio = (calls - start) / max(plain - start, 1e-3)
    lines.append(f"pyflakes --trace calls: {calls / plain:.1f}x its plain CPU (whole processes); "
                 f"{ratio:.1f}x with the interpreter's start-up and pyflakes' import subtracted "
                 f"(target <= 20) {'met' if ratio <= 20 else 'MISSED'}")
    if "viztracer" in figures:
        viz = statistics.median(c for _, c in figures["viztracer"])
        lines.append(f"  beside VizTracer (no values kept): {viz / plain:.1f}x its plain CPU; "
                     f"SnapState / VizTracer {calls / viz:.1f}x")
    if "calls" in steps and "calls-empty" in steps and steps["calls"] > steps["calls-empty"]:
        per_step = (calls - empty - (plain - start)) / (steps["calls"] - steps["calls-empty"])
        lines.append(f"  one call/return step: {per_step * 1e6:.0f} us of CPU (calls minus "
                     f"calls-empty minus the linting itself, over the steps it added)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="w1,w1dict,w2dicts,langgraph,read,pyflakes")
    parser.add_argument("--lengths", default="1000,5000,20000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lint-lines", type=int, default=300)
    parser.add_argument("--read-steps", type=int, default=1_000_000,
                        help="steps of the file read cold (read)")
    parser.add_argument("--quick", action="store_true",
                        help="W1 at 1,000 and 5,000 steps, a 100,000-step read file")
    parser.add_argument("--child")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--workdir")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.steps, args.workdir)))
        return 0
    args.only = args.only.split(",")
    if args.quick:
        args.lengths, args.read_steps = "1000,5000", min(args.read_steps, 100_000)
    args.lengths = [int(n) for n in args.lengths.split(",")]
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as workdir:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # inherited by every child
        os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(workdir, "pycache")
        lines = bench_workloads(args, workdir)
        if "read" in args.only:
            lines += ["", *bench_read(args, workdir)]
        if "pyflakes" in args.only:
            lines += ["", *bench_pyflakes(args, workdir)]
    loads.append(os.getloadavg()[0])
    print(f"issue 19 capture-cost bench; load average {loads[0]:.1f} at the start, "
          f"{loads[1]:.1f} at the end (2 cores, shared: figures are noisy)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
