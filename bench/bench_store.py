"""Recording into a PostgreSQL store vs. into a file vs. LangGraph's PostgresSaver (issue 18).

Run from the repository root (it starts its own PostgreSQL server, as the tests do)::

    python bench/bench_store.py                  # W1, 1,000 steps, 3 repeats
    python bench/bench_store.py --steps 300 --repeats 2
    python bench/bench_store.py --skip-langgraph

The workload is W1 of ``bench_storage.py`` (a chat history growing one ~500-character message
per step from 200, a 20-item plan, a 100-key scratchpad; one checkpoint per step). Each side
runs in a fresh interpreter, sides interleaved within each repeat, every repeat into a fresh
database of one server:

- ``baseline``: the loop, no capture;
- ``file``: ``snap.record(FILE)``;
- ``postgres``: ``snap.record(URL)`` — the local spool and its writer process (the default);
- ``postgres-direct``: the same with ``SNAPSTATE_SPOOL=0`` (the recorder writes each step's
  transaction itself, as before the spool);
- ``langgraph-none`` / ``langgraph-pg``: the same loop as a one-node LangGraph StateGraph
  without a checkpointer / with ``PostgresSaver`` on the same database (``bench`` extra).

Figures per side: overhead per step (median step time minus the median step time of its own
uncaptured loop: ``baseline`` for SnapState, ``langgraph-none`` for LangGraph), CPU per step
above the same baseline (the recorder process; for ``postgres`` also with its writer process's
CPU), the wait at the end of the run (SnapState: ``record``'s exit, which waits for the spool to
be stored), and bytes stored after the run (a file's size; in a database, every table, index and
TOAST of the side's schema). Min and median over repeats; ratios against the file and against
LangGraph measured in the same run. Goals: ≤ 0.5× LangGraph's overhead, ≤ 1.5× the file's.
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
for extra in (str(ROOT), str(ROOT / "bench")):
    if extra not in sys.path:
        sys.path.insert(0, extra)

import bench_storage as w1  # noqa: E402 - the W1 workload, shared with the storage bench

SIDES = ("baseline", "file", "postgres", "postgres-direct", "langgraph-none", "langgraph-pg")
GOALS = {"vs_langgraph": 0.5, "vs_file": 1.5}


def _schema_bytes(url: str, schema: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind IN ('r', 'm')", (schema,)).fetchone()
    return int(row[0])


def _langgraph_pg(steps: int, url: str) -> tuple[list[float], float]:
    """W1 as ``bench_storage.loop_langgraph`` builds it, checkpointed by ``PostgresSaver``."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        return _graph_loop(steps, saver)


def _graph_loop(steps: int, saver: Any) -> tuple[list[float], float]:
    import operator
    import random
    from typing import Annotated, TypedDict

    from langgraph.graph import END, StateGraph

    State = TypedDict("State", {"messages": Annotated[list, operator.add], "plan": list,
                                "scratchpad": dict, "counter": int})  # type: ignore[misc]
    rng = random.Random(11)
    pending = [w1.updates(i, rng) for i in range(steps)]
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
    app = graph.compile(checkpointer=saver) if saver is not None else graph.compile()
    app.invoke(w1.initial_state("w1"), {"recursion_limit": steps + 10,
                                       "configurable": {"thread_id": "bench"}})
    end = time.perf_counter()
    stamps.append(end)
    return [b - a for a, b in zip(stamps, stamps[1:])], 0.0


def child(side: str, steps: int, target: str) -> dict[str, Any]:
    """Run one side in this process; its figures as a dict."""
    writers: list[Any] = []
    if side.startswith("postgres"):
        from snapstate_capture.capture import spooled

        start = spooled.start_writer

        def keep(spool: Path) -> Any:  # the writer process, to add its CPU once it ended
            proc = start(spool)
            writers.append(proc)
            return proc

        spooled.start_writer = keep
        if side == "postgres-direct":
            os.environ["SNAPSTATE_SPOOL"] = "0"
    cpu = time.process_time()
    end_wait = 0.0
    wall = time.perf_counter()
    if side in ("baseline", "file", "postgres", "postgres-direct"):
        durations = w1.loop_plain("w1", steps, side != "baseline", target)
        end_wait = time.perf_counter() - w1._STAMPS[-1]  # the record block's exit
    elif side == "langgraph-none":
        durations, _ = _graph_loop(steps, None)
    else:
        durations, _ = _langgraph_pg(steps, target)
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    before = children.ru_utime + children.ru_stime
    for proc in writers:
        proc.wait(timeout=600)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    writer_cpu = children.ru_utime + children.ru_stime - before
    if side == "file":
        stored = w1._file_bytes(target)
    elif side.startswith("postgres"):
        stored = _schema_bytes(target, "snapstate")
    elif side == "langgraph-pg":
        stored = _schema_bytes(target, "public")
    else:
        stored = 0
    return {"median_ms": statistics.median(durations) * 1e3,
            "cpu_ms": cpu / steps * 1e3, "wall_ms": wall / steps * 1e3, "writer_cpu_ms": writer_cpu / steps * 1e3,
            "end_wait_s": max(end_wait, 0.0), "bytes": stored}


def run_child(side: str, steps: int, target: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--child", side, "--steps", str(steps),
                           "--target", target], capture_output=True, text=True, env=env,
                          timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{side} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _summary(values: list[float]) -> tuple[float, float]:
    return min(values), statistics.median(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-langgraph", action="store_true")
    parser.add_argument("--child")
    parser.add_argument("--target")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.steps, args.target)))
        return 0

    from tests.store.pg_server import PgServer

    sides = [s for s in SIDES if not (args.skip_langgraph and s.startswith("langgraph"))]
    work = Path(tempfile.mkdtemp(prefix="snapstate-bench-store-"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "XDG_CONFIG_HOME": str(work / "config"), "SNAPSTATE_SPOOL_DIR": str(work / "spool")}
    server = PgServer().start()
    results: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    try:
        for repeat in range(args.repeats):
            for side in sides:
                if side in ("file", "baseline"):
                    target = str(work / f"{side}-{repeat}.snap")
                else:  # a fresh database per side and repeat: bytes are the side's own
                    target = server.create_database(f"{side.replace('-', '_')}_{repeat}")
                results[side].append(run_child(side, args.steps, target, env))
                print(f"repeat {repeat + 1} {side}: {results[side][-1]}", file=sys.stderr)
    finally:
        server.stop()
    print(report(results, args))
    return 0


def report(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> str:
    load = os.getloadavg()
    lines = [f"W1, {args.steps} steps, {args.repeats} repeats, load average "
             f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}", "",
             "| side | step overhead ms (min, median) | run wall ms/step above baseline"
             " | CPU ms/step above baseline | + writer process CPU | end of run wait s"
             " | bytes stored |",
             "|---|---|---|---|---|---|---|"]
    overhead: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    cpu_all: dict[str, list[float]] = {}  # with the spool writer process's CPU
    wall: dict[str, list[float]] = {}
    for side, runs in results.items():
        if side in ("baseline", "langgraph-none"):
            continue
        base = results["langgraph-none" if side.startswith("langgraph") else "baseline"]
        overhead[side] = [r["median_ms"] - b["median_ms"] for r, b in zip(runs, base)]
        cpu[side] = [r["cpu_ms"] - b["cpu_ms"] for r, b in zip(runs, base)]
        with_writer = cpu_all[side] = [c + r["writer_cpu_ms"] for c, r in zip(cpu[side], runs)]
        wall[side] = [r["wall_ms"] - b["wall_ms"] for r, b in zip(runs, base)]
        lines.append(
            f"| {side} | {_pair(overhead[side])} | {_pair(wall[side])} | {_pair(cpu[side])} | "
            f"{_pair(with_writer)} | "
            f"{_pair([r['end_wait_s'] for r in runs], '.2f')} | "
            f"{statistics.median([r['bytes'] for r in runs]) / 1e6:.2f} MB |")
    lines.append("")
    for side in ("postgres", "postgres-direct"):
        if side not in overhead:
            continue
        for other, goal in (("file", GOALS["vs_file"]), ("langgraph-pg", GOALS["vs_langgraph"])):
            if other not in overhead:
                continue
            ratios = [a / b if b > 0 else float("inf")
                      for a, b in zip(overhead[side], overhead[other])]
            cpu_ratios = [a / b if b > 0 else float("inf")
                          for a, b in zip(cpu[side], cpu[other])]
            wall_ratios = [a / b if b > 0 else float("inf")
                           for a, b in zip(wall[side], wall[other])]
            all_ratios = [a / b if b > 0 else float("inf")
                          for a, b in zip(cpu_all[side], cpu_all[other])]
            verdict = "met" if statistics.median(wall_ratios) <= goal else "missed"
            lines.append(f"{side} / {other}: run wall {_pair(wall_ratios, '.2f')}×, step "
                         f"{_pair(ratios, '.2f')}×, CPU {_pair(cpu_ratios, '.2f')}×, CPU with "
                         f"the writer process {_pair(all_ratios, '.2f')}× "
                         f"(goal ≤ {goal}× on run wall: {verdict})")
    return "\n".join(lines)


def _pair(values: list[float], form: str = ".3f") -> str:
    low, mid = _summary(values)
    return f"{low:{form}}, {mid:{form}}"


if __name__ == "__main__":
    raise SystemExit(main())
