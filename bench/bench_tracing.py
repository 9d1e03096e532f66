"""Tracing overhead (issue 6 point 7): ratios against the untraced program, measured in one run.

1. A CPU-bound pure-Python loop (ints and floats, four lines per iteration) under:
   an empty line tracer, a tracer copying ``f_locals`` at each line, SnapState line tracing
   (values stored in the timeline file) and PySnooper (text to a file), side by side.
   Target: SnapState lines <= 30x (PySnooper was measured at 668x, the empty tracer 4.1x, the
   f_locals copier 15.6x on this kind of machine).
2. An agent-like loop (tool calls that build and parse JSON, dict updates, a 5 ms sleep standing
   for each tool's I/O; 200 steps, about 2.5 s) under SnapState call tracing. Target: <= 1.3x.
   The figure includes starting and ending the recording (printed apart as well).
3. Small calls (issue 19 point 2: "a call step of a function with small locals costs a few
   microseconds"): ``add(a, b)`` on two ints, called ``--small-calls`` times from a loop, under
   SnapState call tracing and under an empty trace function (what Python charges for calling a
   Python tracer at each call and return): CPU µs per call above the untraced loop. Each call
   makes two steps (call, return) and catches its caller up.

Each figure is the best of ``--repeat`` runs (wall clock, ``time.perf_counter``); the SnapState
figures include starting the writer process, flushing to it and waiting for it to store
everything at the end of the block. "Program's own CPU time" is the recording process's
``time.process_time`` (the writer process runs beside it, on the other core when one is free).
Run: ``python bench/bench_tracing.py [--n 200000] [--repeat 3]``. The machine may be shared:
read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import snapstate_capture as snap  # noqa: E402


def cpu_loop(n: int) -> tuple[int, float]:
    total = 0
    acc = 1.5
    for i in range(n):
        x = i * i
        if x % 3 == 0:
            total += x
        else:
            acc = acc * 0.5 + i
    return total, acc


#: Latency of one tool call (the network, an API): fast tools; LLM calls take 100x longer.
TOOL_SECONDS = 0.005


def tool_search(query: str) -> dict:
    time.sleep(TOOL_SECONDS)
    docs = [{"id": i, "title": f"{query} result {i}", "score": 1.0 / (i + 1)} for i in range(20)]
    return json.loads(json.dumps({"query": query, "docs": docs}))


def tool_summarize(docs: list) -> str:
    time.sleep(TOOL_SECONDS)
    return " / ".join(d["title"] for d in docs[:5])


def agent_loop(steps: int) -> dict:
    state = {"history": [], "notes": {}, "step": 0}
    for step in range(steps):
        found = tool_search(f"topic {step % 7}")
        summary = tool_summarize(found["docs"])
        state["notes"][f"topic {step % 7}"] = summary
        state["history"].append({"step": step, "hits": len(found["docs"])})
        state["step"] = step
    return state


def add(a: int, b: int) -> int:
    c = a + b
    return c


def small_calls(n: int) -> int:
    total = 0
    for i in range(n):
        total = add(total, i) % 1000
    return total


def _timed(func, *args) -> float:
    start = time.perf_counter()
    func(*args)
    return time.perf_counter() - start


def _cpu_timed(func, *args) -> float:
    start = time.process_time()
    func(*args)
    return time.process_time() - start


def _with_tracer(tracer, func, *args) -> float:
    sys.settrace(tracer)
    try:
        return _timed(func, *args)
    finally:
        sys.settrace(None)


def _empty(frame, event, arg):
    return _empty


def _copy_locals(frame, event, arg):
    dict(frame.f_locals)
    return _copy_locals


def _snapstate(trace: str, func, *args) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.snap")
        start, cpu = time.perf_counter(), time.process_time()
        with snap.record(path, trace=trace, include=[__file__]):
            func(*args)
        elapsed = time.perf_counter() - start
        _snapstate.cpu = time.process_time() - cpu  # type: ignore[attr-defined]
        with snap.open_timeline(path) as timeline:
            steps = len(timeline.runs[-1].steps)
        _snapstate.steps = steps  # type: ignore[attr-defined]
        return elapsed


def _pysnooper(func, *args) -> float:
    import pysnooper

    with tempfile.TemporaryDirectory() as tmp:
        traced = pysnooper.snoop(os.path.join(tmp, "snoop.log"))(func)
        return _timed(traced, *args)


def best(repeat: int, measure, *args) -> float:
    return min(measure(*args) for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="CPU loop iterations")
    parser.add_argument("--snoop-n", type=int, default=20_000,
                        help="iterations for PySnooper (slow; its ratio is per iteration)")
    parser.add_argument("--agent-steps", type=int, default=200)
    parser.add_argument("--small-calls", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, r = args.n, args.repeat

    base = best(r, _timed, cpu_loop, n)
    base_cpu = best(r, _cpu_timed, cpu_loop, n)
    print(f"CPU-bound loop, {n} iterations: untraced {base * 1e3:.1f} ms")
    rows = [
        ("empty line tracer", best(r, _with_tracer, _empty, cpu_loop, n) / base),
        ("f_locals copy at each line", best(r, _with_tracer, _copy_locals, cpu_loop, n) / base),
    ]
    lines_runs = [(_snapstate("lines", cpu_loop, n), _snapstate.cpu) for _ in range(r)]
    rows.append(("snapstate --trace lines (wall)", min(w for w, _ in lines_runs) / base))
    rows.append(("  same, program's own CPU time", min(c for _, c in lines_runs) / base_cpu))
    lines_steps = _snapstate.steps  # type: ignore[attr-defined]
    try:
        small_base = best(r, _timed, cpu_loop, args.snoop_n)
        rows.append(("pysnooper", best(1, _pysnooper, cpu_loop, args.snoop_n) / small_base))
    except ImportError:
        rows.append(("pysnooper (not installed: pip install '.[bench]')", float("nan")))
    for label, ratio in rows:
        print(f"  {label:<34} {ratio:8.1f}x")
    print(f"  (snapstate stored {lines_steps} steps; target <= 30x)")

    fixed = best(r, _snapstate, "calls", agent_loop, 0)
    fixed_cpu = _snapstate.cpu  # type: ignore[attr-defined]
    agent_base = best(r, _timed, agent_loop, args.agent_steps)
    calls = best(r, _snapstate, "calls", agent_loop, args.agent_steps) / agent_base
    print(f"Agent-like loop, {args.agent_steps} steps: untraced {agent_base * 1e3:.1f} ms")
    print(f"  {'snapstate --trace calls':<34} {calls:8.2f}x")
    print(f"  (snapstate stored {_snapstate.steps} steps; target <= 1.3x; starting and "  # type: ignore
          f"ending a recording alone: {fixed * 1e3:.0f} ms)")
    calls_n = args.small_calls
    plain_cpu = best(r, _cpu_timed, small_calls, calls_n)

    def empty_cpu() -> float:
        sys.settrace(_empty)
        try:
            return _cpu_timed(small_calls, calls_n)
        finally:
            sys.settrace(None)

    def traced_cpu() -> float:
        _snapstate("calls", small_calls, calls_n)
        return _snapstate.cpu  # type: ignore[attr-defined]

    empty = best(r, empty_cpu)
    traced = best(r, traced_cpu) - fixed_cpu
    print(f"Small calls, {calls_n} calls of add(a, b): untraced {plain_cpu / calls_n * 1e6:.2f} "
          f"µs CPU a call")
    print(f"  {'empty trace function':<34} {(empty - plain_cpu) / calls_n * 1e6:8.2f} µs a call")
    print(f"  {'snapstate --trace calls':<34} {(traced - plain_cpu) / calls_n * 1e6:8.2f} µs a call"
          f" (two steps; starting and ending a recording, {fixed_cpu * 1e3:.0f} ms, subtracted)")
    print("Note: ratios measured on a shared machine; other load inflates them.")


if __name__ == "__main__":
    main()
