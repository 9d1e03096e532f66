"""Storage and capture-overhead benchmark: SnapState vs. no capture vs. LangGraph (issue 7).

Run from the repository root::

    python bench/bench_storage.py                 # everything, 1,000 steps
    python bench/bench_storage.py --steps 300 --only w1
    python bench/bench_storage.py --read-steps 100000   # smaller million-step file

Every configuration runs in its own child process (so peak RSS is its own), alternating
workloads; the parent prints one table of figures and ratios. Workloads (issue 7):

- W1: ``messages`` (200 chat dicts ``{"role", "content"}`` with ~500-character content, one
  appended per step), ``plan`` (20 dicts, one item's status changes every 10 steps),
  ``scratchpad`` (dict of 100 keys, one key set per step), ``counter`` (+1 per step).
- W2: W1 plus ``corpus``, a ~5 MB list of floats and strings that never changes.

Sides: ``baseline`` (the loop, no capture), ``snapstate`` (the loop with ``snap.checkpoint()``
each step), ``langgraph`` (a StateGraph looping one node, SqliteSaver, default channels; the
node returns the step's updates) and ``langgraph-delta`` (the same with ``messages`` in a
``DeltaChannel``). LangGraph sides need the ``bench`` extra (``pip install '.[bench]'``) and are
skipped with a message when it is absent. Overhead per step = median step time of the side
minus the median step time of its own no-checkpoint run (baseline loop for SnapState, the same
graph without a checkpointer for LangGraph).

``read``: a file of W1's 1,000 recorded steps plus one run of ``--read-steps`` steps
(1,000,000 by default) bulk-written with ``TimelineWriter.append_steps`` referencing the same
frame records; figures: time to open it and list its runs, and the time to read
every local's preview of a random step (wall and thread CPU time: median, p95, max).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WORDS = ("agent tool call result plan step search fetch summary answer user question context "
         "memory token model reply error retry budget cost note draft final check").split()

TARGETS = {  # issue 7, point 3
    "w1_overhead_ms": 0.4, "w1_vs_langgraph": 0.5, "w1_bytes": 1.5e6,
    "w2_overhead_ms": 10.0, "w2_bytes": 8e6, "read_ms": 5.0, "open_s": 0.2,
}


# -- workloads -------------------------------------------------------------------------------
def _text(rng: random.Random, size: int) -> str:
    out = []
    total = 0
    while total < size:
        word = rng.choice(WORDS)
        out.append(word)
        total += len(word) + 1
    return " ".join(out)[:size]


def initial_state(workload: str, seed: int = 7) -> dict[str, Any]:
    """The starting state of ``workload`` ("w1" or "w2"), deterministic for ``seed``."""
    rng = random.Random(seed)
    state: dict[str, Any] = {
        "messages": [{"role": rng.choice(("user", "assistant")),
                      "content": _text(rng, 500)} for _ in range(200)],
        "plan": [{"id": i, "task": _text(rng, 60), "status": "todo"} for i in range(20)],
        "scratchpad": {f"key{i}": _text(rng, 40) for i in range(100)},
        "counter": 0,
    }
    if workload == "w2":
        corpus: list[Any] = []
        for i in range(120_000):
            corpus.append(rng.random() * 1000)
            corpus.append(f"doc-{i:06d}-{rng.choice(WORDS)}-{rng.choice(WORDS)}")
        state["corpus"] = corpus
    return state


def updates(step: int, rng: random.Random) -> dict[str, Any]:
    """What step ``step`` changes: one new message, one scratchpad key, maybe a plan item."""
    out: dict[str, Any] = {
        "message": {"role": "assistant" if step % 2 else "user", "content": _text(rng, 500)},
        "scratch": (f"key{step % 100}", _text(rng, 40)),
    }
    if step % 10 == 0:
        out["plan"] = (step // 10) % 20
    return out


#: Step inputs and timestamps live in module globals, not locals, so the captured stack holds
#: exactly the workload's state (the agent frame's locals) and nothing the bench adds.
_PENDING: list[dict[str, Any]] = []
_STAMPS: list[float] = []


def agent(messages: list, plan: list, scratchpad: dict, corpus: list | None, steps: int) -> int:
    """The agent loop of W1/W2: one checkpoint per step (a no-op outside ``snap.record``)."""
    import snapstate_capture as snap

    counter = 0
    while counter < steps:
        _STAMPS.append(time.perf_counter())
        apply(_PENDING[counter], messages, plan, scratchpad)
        counter += 1
        snap.checkpoint()
    _STAMPS.append(time.perf_counter())
    return counter


def apply(change: dict[str, Any], messages: list, plan: list, scratchpad: dict) -> None:
    """One step's work on the state: append a message, set a scratchpad key, maybe a plan item."""
    messages.append(change["message"])
    key, text = change["scratch"]
    scratchpad[key] = text
    if "plan" in change:
        item = plan[change["plan"]]
        item["status"] = "done" if item["status"] == "todo" else "todo"


def loop_plain(workload: str, steps: int, capture: bool, path: str | None) -> list[float]:
    """Run ``workload`` for ``steps`` steps in a plain loop; return each step's duration (s)."""
    import snapstate_capture as snap

    _prepare(steps)
    _STAMPS.clear()
    if capture:
        with snap.record(path, name=f"bench-{workload}"):
            agent(*_parts(workload), steps)
    else:
        agent(*_parts(workload), steps)
    return [b - a for a, b in zip(_STAMPS, _STAMPS[1:])]


def _prepare(steps: int) -> None:
    """Generate the step inputs outside the timed loop, in a frame of their own: the recorded
    stack starts at ``loop_plain``, whose locals must not hold the generator (it was captured
    at every step until the W1 overhead work noticed it: ~0.1 ms per step that W1 does not have)."""
    rng = random.Random(11)
    _PENDING[:] = [updates(i, rng) for i in range(steps)]


def _parts(workload: str) -> tuple[list, list, dict, list | None]:
    state = initial_state(workload)
    return state["messages"], state["plan"], state["scratchpad"], state.get("corpus")


def loop_langgraph(workload: str, steps: int, mode: str, path: str | None) -> list[float]:
    """Run ``workload`` as a LangGraph StateGraph of one looping node.

    ``mode``: "none" (no checkpointer), "default" (SqliteSaver, default channels) or "delta"
    (SqliteSaver, ``messages`` in a DeltaChannel). Returns the time between consecutive node
    entries (one superstep, including the checkpoint LangGraph writes after it).
    """
    import operator
    import sqlite3
    from typing import Annotated, TypedDict

    from langgraph.graph import END, StateGraph

    if mode == "delta":
        from langgraph.channels import DeltaChannel

        def extend(state: list, writes: list) -> list:
            return state + [m for batch in writes for m in batch]

        messages_type = Annotated[list, DeltaChannel(extend)]
    else:
        messages_type = Annotated[list, operator.add]

    fields: dict[str, Any] = {"messages": messages_type, "plan": list, "scratchpad": dict,
                              "counter": int}
    if workload == "w2":
        fields["corpus"] = list
    State = TypedDict("State", fields)  # type: ignore[misc]

    rng = random.Random(11)
    pending = [updates(i, rng) for i in range(steps)]
    stamps: list[float] = []

    def node(state: dict[str, Any]) -> dict[str, Any]:
        stamps.append(time.perf_counter())
        i = state["counter"]
        change = pending[i]
        key, text = change["scratch"]
        scratchpad = dict(state["scratchpad"])
        scratchpad[key] = text
        out: dict[str, Any] = {"messages": [change["message"]], "scratchpad": scratchpad,
                               "counter": i + 1}
        if "plan" in change:
            plan = [dict(item) for item in state["plan"]]
            item = plan[change["plan"]]
            item["status"] = "done" if item["status"] == "todo" else "todo"
            out["plan"] = plan
        return out

    graph = StateGraph(State)
    graph.add_node("step", node)
    graph.set_entry_point("step")
    graph.add_conditional_edges("step", lambda s: END if s["counter"] >= steps else "step")
    config: dict[str, Any] = {"recursion_limit": steps + 10,
                              "configurable": {"thread_id": "bench"}}
    if mode == "none":
        app = graph.compile()
        app.invoke(initial_state(workload), config)
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(path, check_same_thread=False)
        app = graph.compile(checkpointer=SqliteSaver(conn))
        app.invoke(initial_state(workload), config)
        conn.close()
    stamps.append(time.perf_counter())
    return [b - a for a, b in zip(stamps, stamps[1:])]


# -- the million-step file -------------------------------------------------------------------
def build_read_file(path: str, steps: int) -> dict[str, float]:
    """Record W1 (1,000 steps), then bulk-append a run of ``steps`` steps reusing its frames."""
    from snapstate_capture import open_timeline
    from snapstate_capture.store.step_record import StepRecord
    from snapstate_capture.store.writer import TimelineWriter

    loop_plain("w1", 1000, True, path)
    with open_timeline(path) as timeline:
        pool = [step.frame_keys for step in timeline.runs[-1].steps]
        first = timeline.runs[-1].steps[0]
        where = (first.function, first.filename, first.lineno)
    started = time.perf_counter()
    writer = TimelineWriter(path)
    run_id = writer.begin_run(name="million", entry={"kind": "bench"}, env={})
    batch: list[StepRecord] = []
    now = time.time()
    for i in range(steps):
        batch.append(StepRecord(kind="checkpoint", label=None, wall=now + i * 1e-3,
                                mono=i * 1e-3, thread="MainThread", task=None,
                                function=where[0], filename=where[1], lineno=where[2],
                                depth=len(pool[i % len(pool)]), frames=pool[i % len(pool)]))
        if len(batch) == 20_000:
            writer.append_steps(run_id, batch)
            batch = []
    if batch:
        writer.append_steps(run_id, batch)
    writer.end_run(run_id, "finished")
    writer.close()
    return {"build_s": time.perf_counter() - started}


def measure_read(path: str, samples: int = 200) -> dict[str, float]:
    """Open time and per-step locals-preview read times on the file from ``build_read_file``."""
    from snapstate_capture import open_timeline

    started = time.perf_counter()
    timeline = open_timeline(path)
    run = timeline.runs[-1]
    total = len(run.steps)
    open_s = time.perf_counter() - started
    rng = random.Random(5)
    times, cpu, full_gc = [], [], []
    collections = [0]

    def count_full(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info.get("generation") == 2:
            collections[0] += 1

    gc.callbacks.append(count_full)
    try:
        for _ in range(samples):
            index = rng.randrange(total)
            before = collections[0]
            started, started_cpu = time.perf_counter(), time.thread_time()
            step = run.steps[index]
            for frame in step.frames:
                for value in frame.locals.values():
                    value.preview  # noqa: B018 - the read being timed
            times.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - started_cpu)
            full_gc.append(collections[0] > before)
    finally:
        gc.callbacks.remove(count_full)
    timeline.close()
    without_gc = sorted(c for c, collected in zip(cpu, full_gc) if not collected)
    times.sort()
    cpu.sort()
    p95 = int(len(times) * 0.95)
    return {"open_s": open_s, "read_ms": statistics.median(times) * 1e3,
            "read_p95_ms": times[p95] * 1e3, "read_max_ms": times[-1] * 1e3,
            "read_cpu_p95_ms": cpu[p95] * 1e3, "read_cpu_max_ms": cpu[-1] * 1e3,
            "read_cpu_max_no_gc_ms": without_gc[-1] * 1e3 if without_gc else 0.0,
            "read_full_gc": sum(full_gc), "steps": total}


# -- child processes -------------------------------------------------------------------------
def _file_bytes(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, path + "-wal", path + "-shm")
               if os.path.exists(p))


def child(config: str, steps: int, read_steps: int, workdir: str) -> dict[str, Any]:
    """Run one configuration ("w1:snapstate", "read", …) and return its figures."""
    if config == "read":
        path = os.path.join(workdir, "million.snap")
        built = build_read_file(path, read_steps)
        return {**built, **measure_read(path), "bytes": _file_bytes(path)}
    workload, side = config.split(":")
    path = os.path.join(workdir, f"{workload}-{side}.{'snap' if side == 'snapstate' else 'db'}")
    cpu = time.process_time()
    if side in ("baseline", "snapstate"):
        durations = loop_plain(workload, steps, side == "snapstate", path)
    else:
        mode = {"langgraph": "default", "langgraph-delta": "delta",
                "langgraph-none": "none"}[side]
        durations = loop_langgraph(workload, steps, mode, path)
    cpu = time.process_time() - cpu  # every thread's CPU: LangGraph's background writes too
    return {"cpu_ms": cpu / steps * 1e3, "median_ms": statistics.median(durations) * 1e3,
            "mean_ms": statistics.fmean(durations) * 1e3,
            "bytes": _file_bytes(path) if os.path.exists(path) else 0,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_child(config: str, args: argparse.Namespace, workdir: str) -> dict[str, Any] | str:
    """Run ``config`` in a fresh interpreter; return its figures or the reason it was skipped."""
    command = [sys.executable, __file__, "--child", config, "--steps", str(args.steps),
               "--read-steps", str(args.read_steps), "--workdir", workdir]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"failed: {last}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def langgraph_available() -> str | None:
    """None when LangGraph and its SQLite saver import, else the reason they do not."""
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
        import langgraph.graph  # noqa: F401
    except ImportError as exc:
        return f"LangGraph not installed ({exc.name}): pip install '.[bench]'"
    return None


# -- the table -------------------------------------------------------------------------------
def _fmt_bytes(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def report(results: dict[str, Any], args: argparse.Namespace, skipped: str | None) -> list[str]:
    """Format the figures and the issue-7 targets as text lines."""
    lines = [f"SnapState storage bench — {args.steps} steps per workload, "
             f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} "
             "(shared machine: figures are noisy)", ""]
    lines.append(f"{'workload/side':22} {'median ms':>10} {'mean ms':>9} {'overhead':>9} "
                 f"{'ovh mean':>9} {'ovh cpu':>8} {'file':>10} {'peak RSS':>9}")
    for workload in args.only_workloads:
        base = results.get(f"{workload}:baseline")
        lg_none = results.get(f"{workload}:langgraph-none")
        for side in ("baseline", "snapstate", "langgraph", "langgraph-delta"):
            figures = results.get(f"{workload}:{side}")
            if figures is None:
                continue
            if isinstance(figures, str):
                lines.append(f"{workload + '/' + side:22} {figures}")
                continue
            ref = base if side == "snapstate" else lg_none if side.startswith("langgraph") \
                else None
            if isinstance(ref, dict):
                figures["overhead_ms"] = figures["median_ms"] - ref["median_ms"]
                figures["overhead_mean_ms"] = figures["mean_ms"] - ref["mean_ms"]
                figures["overhead_cpu_ms"] = figures["cpu_ms"] - ref["cpu_ms"]
            over = figures.get("overhead_ms")
            over_cpu = figures.get("overhead_cpu_ms")
            over_mean = figures.get("overhead_mean_ms")
            lines.append(f"{workload + '/' + side:22} {figures['median_ms']:10.3f} "
                         f"{figures['mean_ms']:9.3f} "
                         f"{'' if over is None else f'{over:9.3f}':>9} "
                         f"{'' if over_mean is None else f'{over_mean:9.3f}':>9} "
                         f"{'' if over_cpu is None else f'{over_cpu:8.3f}':>8} "
                         f"{_fmt_bytes(figures['bytes']) if figures['bytes'] else '-':>10} "
                         f"{figures['rss_mb']:7.0f}MB")
    lines.append("overhead = median step time minus the no-capture run's; 'ovh mean' uses mean "
                 "step times (total time / steps), which also counts work LangGraph does in "
                 "the background between steps; 'ovh cpu' uses the process's CPU time per step "
                 "(all threads; includes building the initial state), the figure least "
                 "disturbed by a loaded machine.")
    if skipped:
        lines.append(f"LangGraph sides skipped: {skipped}")
    lines.append("")
    lines.extend(_targets(results))
    return lines


def _targets(results: dict[str, Any]) -> list[str]:
    out = ["targets (issue 7):"]
    for workload, limit_ms, limit_bytes in (("w1", TARGETS["w1_overhead_ms"], TARGETS["w1_bytes"]),
                                            ("w2", TARGETS["w2_overhead_ms"], TARGETS["w2_bytes"])):
        ours = results.get(f"{workload}:snapstate")
        if not isinstance(ours, dict) or ours.get("overhead_ms") is None:
            continue
        out.append(f"  {workload} overhead {ours['overhead_ms']:.3f} ms/step "
                   f"(target <= {limit_ms}) {_verdict(ours['overhead_ms'] <= limit_ms)}; "
                   f"file {_fmt_bytes(ours['bytes'])} (target <= {_fmt_bytes(limit_bytes)}) "
                   f"{_verdict(ours['bytes'] <= limit_bytes)}")
        peers = [results.get(f"{workload}:{side}") for side in ("langgraph", "langgraph-delta")]
        peers = [p for p in peers if isinstance(p, dict) and p.get("overhead_mean_ms") is not None]
        if peers:
            best_time = min(p["overhead_mean_ms"] for p in peers)
            best_bytes = min(p["bytes"] for p in peers)
            ratio = (ours["overhead_mean_ms"] / best_time if best_time > 0 else float("inf"))
            best_cpu = min(p["overhead_cpu_ms"] for p in peers)
            cpu_ratio = ours["overhead_cpu_ms"] / best_cpu if best_cpu > 0 else float("inf")
            line = (f"  {workload} SnapState/LangGraph-best: overhead (mean) {ratio:.2f}x, "
                    f"(cpu) {cpu_ratio:.2f}x, file {ours['bytes'] / best_bytes:.4f}x")
            if workload == "w1":
                line += f" (overhead target <= {TARGETS['w1_vs_langgraph']}x) " \
                        f"{_verdict(ratio <= TARGETS['w1_vs_langgraph'])}"
            out.append(line)
    read = results.get("read")
    if isinstance(read, dict):
        out.append(f"  read: {read['steps']:,}-step run ({_fmt_bytes(read['bytes'])}, built in "
                   f"{read['build_s']:.1f} s): open {read['open_s'] * 1e3:.1f} ms "
                   f"(target <= {TARGETS['open_s'] * 1e3:.0f}) "
                   f"{_verdict(read['open_s'] <= TARGETS['open_s'])}")
        out.append(f"  read: locals previews of a random step (target <= {TARGETS['read_ms']} ms):"
                   f" wall median {read['read_ms']:.2f} ms, p95 {read['read_p95_ms']:.2f} ms "
                   f"{_verdict(read['read_p95_ms'] <= TARGETS['read_ms'])}, max "
                   f"{read['read_max_ms']:.2f} ms "
                   f"{_verdict(read['read_max_ms'] <= TARGETS['read_ms'])}; CPU p95 "
                   f"{read['read_cpu_p95_ms']:.2f} ms, max {read['read_cpu_max_ms']:.2f} ms; "
                   f"{read['read_full_gc']} sample(s) ran a full cyclic-GC collection, the "
                   f"others' CPU max is {read['read_cpu_max_no_gc_ms']:.2f} ms")
    elif read is not None:
        out.append(f"  read: {read}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="steps per workload (1000)")
    parser.add_argument("--read-steps", type=int, default=1_000_000,
                        help="steps of the bulk-written run for the read figures (1,000,000)")
    parser.add_argument("--only", default="w1,w2,read",
                        help="comma-separated subset of w1, w2, read (default: all)")
    parser.add_argument("--skip-langgraph", action="store_true", help="leave out LangGraph")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.steps, args.read_steps, args.workdir)))
        return 0
    chosen = [w.strip() for w in args.only.split(",") if w.strip()]
    args.only_workloads = [w for w in chosen if w in ("w1", "w2")]
    skipped = "--skip-langgraph given" if args.skip_langgraph else langgraph_available()
    sides = ["baseline", "snapstate"]
    if not skipped:
        sides += ["langgraph-none", "langgraph", "langgraph-delta"]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="snapstate-bench-") as workdir:
        for workload in args.only_workloads:
            for side in sides:
                config = f"{workload}:{side}"
                print(f"running {config} …", file=sys.stderr, flush=True)
                results[config] = run_child(config, args, workdir)
        if "read" in chosen:
            print("running read (building the big file) …", file=sys.stderr, flush=True)
            results["read"] = run_child("read", args, workdir)
    print("\n".join(report(results, args, skipped)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
