"""Benchmark: the cost of capturing one value (preview + payload), per kind of value.

Cases (built here, deterministic):
- ``w1_messages``: W1's message list (issue 7) — 200 chat dicts, role + ~500-character content;
- ``w1_state``: all of W1's state — messages, plan (20 dicts), scratchpad (100 keys), counter;
- ``object_with_lock``: a small object with one unpicklable attribute (the part-by-part path);
- ``config_with_key``: a dict with an ``api_key`` (fast path, then redaction by parts);
- ``numpy_100mb``: a 100 MB float64 array that never changes (issue 3), with the store's
  BLAKE2b content hash of its payload measured separately — what one step of that array costs.

Figures: microseconds per ``capture_value`` call (median and best of ``--rounds`` rounds of
``--repeat`` calls) and, as the baseline measured in the same run, one C ``pickle.dumps`` of the
same value: the ratio capture/pickle (CPU) says what previews, the secret check and the part-by-part
path add on top of serializing at all.

Usage: ``python bench/bench_values.py [--rounds 7] [--repeat 200] [--skip-numpy]
[--compare OTHER_CHECKOUT]``. ``--compare`` also runs the cases against another checkout of
SnapState (e.g. an older commit in a git worktree) in a child process and prints both columns.
Exit 0 either way (figures, not a test). The machine is shared: run it twice and read ratios.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def w1_messages() -> list[dict]:
    words = "the agent reads the tool output and plans the next call carefully ".split()
    return [{"role": "user" if i % 2 else "assistant",
             "content": " ".join(words[(i + j) % len(words)] for j in range(75))[:500]}
            for i in range(200)]


def w1_state() -> dict:
    return {"messages": w1_messages(),
            "plan": [{"step": i, "tool": f"tool{i % 4}", "done": i < 5} for i in range(20)],
            "scratchpad": {f"key{i}": f"value {i}" for i in range(100)},
            "counter": 200}


class Worker:
    def __init__(self) -> None:
        self.name = "fetcher"
        self.retries = 3
        self.history = [{"url": f"https://example.org/{i}", "ok": True} for i in range(20)]
        self.lock = threading.Lock()


def cases(skip_numpy: bool) -> dict:
    built = {"w1_messages": w1_messages(), "w1_state": w1_state(),
             "object_with_lock": Worker(),
             "config_with_key": {"model": "m", "api_key": "sk-" + "x" * 40, "max_tokens": 512}}
    if not skip_numpy:
        import numpy as np

        built["numpy_100mb"] = np.arange(100 * 1024 * 1024 // 8, dtype=np.float64)
    return built


def timed(fn, rounds: int, repeat: int) -> tuple[float, float]:
    """(median wall, best CPU) microseconds per call over ``rounds`` rounds of ``repeat`` calls.

    The best CPU time (``time.process_time``) is the steadier figure on a shared machine: other
    processes inflate wall time, much less the CPU time this process spends."""
    fn()
    wall, cpu = [], []
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(repeat):
            fn()
        wall.append((time.perf_counter() - start) / repeat * 1e6)
        cpu.append((time.process_time() - start_cpu) / repeat * 1e6)
    return statistics.median(wall), min(cpu)


def measure(rounds: int, repeat: int, skip_numpy: bool) -> dict:
    sys.path.insert(0, os.getcwd())
    from snapstate_capture.options import ValueOptions
    from snapstate_capture.values import capture_value

    options = ValueOptions()
    out = {}
    for name, value in cases(skip_numpy).items():
        n = 3 if name == "numpy_100mb" else repeat
        r = 3 if name == "numpy_100mb" else rounds
        capture = timed(lambda: capture_value(value, name=name, options=options), r, n)
        baseline = timed(lambda: _pickle_or_none(value), r, n)
        row = {"capture_us": capture, "pickle_us": baseline}
        if name == "numpy_100mb":
            data = capture_value(value, name=name, options=options).payload or b""
            row["hash_us"] = timed(lambda: hashlib.blake2b(data, digest_size=16).digest(), r, n)
            row["payload_bytes"] = len(data)
        out[name] = row
    return out


def _pickle_or_none(value) -> bytes | None:
    try:
        return pickle.dumps(value, protocol=5)
    except Exception:  # noqa: BLE001 - the baseline for an unpicklable value is "fails fast"
        return None


def run_in(checkout: Path, args: argparse.Namespace) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--json", "--rounds",
               str(args.rounds), "--repeat", str(args.repeat)] + (
        ["--skip-numpy"] if args.skip_numpy else [])
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"bench in {checkout} failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--skip-numpy", action="store_true")
    parser.add_argument("--compare", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.rounds, args.repeat, args.skip_numpy)))
        return
    here = run_in(ROOT, args)
    other = run_in(args.compare, args) if args.compare else None
    print(f"capture_value cost, µs per call (median wall / best CPU of {args.rounds} rounds); "
          "baseline = one pickle.dumps of the same value (CPU), this run")
    header = f"{'case':<20} {'capture':>17} {'pickle':>15} {'ratio':>6}"
    if other:
        header += f" {'other checkout':>17} {'now/other':>9}"
    print(header)
    for name, row in here.items():
        (med, best), (_, pbest) = row["capture_us"], row["pickle_us"]
        line = f"{name:<20} {med:>8.0f} /{best:>7.0f} {pbest:>15.0f} {best / max(pbest, 1):>6.1f}"
        if other and name in other:
            omed, obest = other[name]["capture_us"]
            line += f" {omed:>8.0f} /{obest:>7.0f} {best / max(obest, 1):>9.2f}"
        print(line)
        if "hash_us" in row:
            print(f"{'':<20} payload {row['payload_bytes'] / 2**20:.1f} MiB; BLAKE2b of it "
                  f"(the store's content hash, once per step) {row['hash_us'][0] / 1000:.0f} ms "
                  f"wall / {row['hash_us'][1] / 1000:.0f} ms CPU")


if __name__ == "__main__":
    main()
