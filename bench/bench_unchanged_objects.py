"""Benchmark: what one *unchanged* object a program holds costs at each step (issue 19: capture
costs what changed, not what is there).

Each case records ``STEPS`` checkpoints of a small loop whose frame also holds one object that
never changes — a lock, a generator, an open file, a socket, an ``httpx.Client``, a
``requests.Session``, an ``openai.OpenAI`` client, an agent object of the program's own holding a
client, a lock and a 20-message history, a pydantic model holding 20 message models, a numpy
array of 100,000 floats, a 1,000-row pandas frame, a datetime, an enum member — and the
baseline is the same loop holding
nothing more, recorded in the same run. Figures: CPU (``time.process_time``) and wall time per
step, min and median over the repeats, each case in a fresh child process (cold caches, as a
program starts), cases interleaved so that load hits them alike; and the extra microseconds a
step pays for the object, with that as a ratio of the baseline step.

Usage: ``python bench/bench_unchanged_objects.py [--repeats 5] [--steps 300]``. Exit 0 either
way (figures, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ("nothing", "lock", "generator", "file", "socket", "httpx.Client", "requests.Session",
         "openai.OpenAI", "agent object", "pydantic model", "numpy array", "pandas frame",
         "datetime", "enum member")


def make(case: str) -> object:
    """The object a case's frame holds (imported here, in the child)."""
    if case == "lock":
        import threading
        return threading.Lock()
    if case == "generator":
        return (n for n in range(3))
    if case == "file":
        return open(__file__, encoding="utf-8")  # noqa: SIM115 - held open on purpose
    if case == "socket":
        import socket
        return socket.socket()
    if case == "httpx.Client":
        import httpx
        return httpx.Client(base_url="https://api.example.invalid/v1")
    if case == "requests.Session":
        import requests
        return requests.Session()
    if case == "openai.OpenAI":
        import openai
        return openai.OpenAI(api_key="sk-bench-" + "0" * 40, base_url="http://127.0.0.1:9/v1")
    if case == "agent object":
        return Agent()
    if case == "numpy array":
        import numpy
        return numpy.arange(100_000, dtype=float)
    if case == "pandas frame":
        import pandas
        return pandas.DataFrame({"a": range(1000), "b": [f"x{i}" for i in range(1000)]})
    if case == "datetime":
        import datetime
        return datetime.datetime(2026, 12, 6, 4, 30)
    if case == "enum member":
        import http
        return http.HTTPStatus.OK
    if case == "pydantic model":
        return State(goal="write", messages=[Message(role="user", content=f"message {i} " * 10)
                                             for i in range(20)])
    return None


try:  # models as programs define them: at module level (pydantic comes with the test extra)
    import pydantic
except ImportError:  # pragma: no cover - the case then fails in its child and is reported
    pydantic = None
else:
    class Message(pydantic.BaseModel):
        role: str
        content: str

    class State(pydantic.BaseModel):
        goal: str
        messages: list[Message]


class Agent:
    """What agents look like: their own data beside a client and a lock."""

    def __init__(self) -> None:
        import threading

        import httpx
        self.client = httpx.Client(base_url="https://api.example.invalid/v1")
        self.lock = threading.Lock()
        self.history = [{"role": "user", "content": f"message {i} " * 10} for i in range(20)]


def loop(held: object, steps: int) -> tuple[float, float]:
    """``steps`` checkpoints with ``held`` in the frame; (CPU, wall) seconds per step."""
    import snapstate_capture as snap

    counter = 0
    cpu, wall = time.process_time(), time.perf_counter()
    while counter < steps:
        counter += 1
        snap.checkpoint()
    return (time.process_time() - cpu) / steps, (time.perf_counter() - wall) / steps


def child(case: str, steps: int) -> dict[str, float]:
    import snapstate_capture as snap

    snap.checkpoint()  # the lazy import, before timing
    with tempfile.TemporaryDirectory() as folder:
        held = make(case)
        with snap.record(os.path.join(folder, "run.snap"), name=case):
            cpu, wall = loop(held, steps)
        return {"cpu": cpu, "wall": wall}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.steps)))
        return 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as config:  # a key of the bench's own, not ~'s
        env["XDG_CONFIG_HOME"] = config
        runs: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
        for _ in range(args.repeats):
            for case in CASES:
                done = subprocess.run([sys.executable, __file__, "--child", case, "--steps",
                                       str(args.steps)], capture_output=True, text=True,
                                      env=env, cwd=ROOT)
                if done.returncode != 0:
                    print(f"{case}: failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
                    return 0
                runs[case].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"{args.steps} checkpoints per case, {args.repeats} repeats; load average "
          f"{os.getloadavg()[0]:.1f}. Microseconds per step:")
    print(f"{'held unchanged':<18} {'cpu min':>8} {'cpu med':>8} {'wall min':>9} {'wall med':>9}"
          f" {'extra cpu':>10} {'ratio':>6}")
    base = statistics.median(r["cpu"] for r in runs["nothing"])
    for case, figures in runs.items():
        cpu = [r["cpu"] * 1e6 for r in figures]
        wall = [r["wall"] * 1e6 for r in figures]
        extra = statistics.median(cpu) - base * 1e6
        print(f"{case:<18} {min(cpu):8.0f} {statistics.median(cpu):8.0f} {min(wall):9.0f} "
              f"{statistics.median(wall):9.0f} {extra:10.0f} {statistics.median(cpu) / (base * 1e6):6.2f}")
    print("extra cpu: median step CPU minus the baseline's ('nothing'); ratio: the same, divided")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
