"""Benchmark: what signing and encryption at rest cost per recorded step, and what verify costs.

Three configurations record the same agent-like loop (a checkpoint per step with a growing
message list, a plan dict and a counter), each into a fresh file, in the same process and run:

- ``unsigned``: no user key (the baseline);
- ``signed``: a user key exists, so every step re-signs the run — with the ``crypto`` extra
  installed, with Ed25519 (``public_keys.py``), which teammates can check;
- ``hmac``: the same with HMAC-SHA256 (``signing.py``), what a user without the extra gets;
- ``encrypted``: signed, and ``encrypt=True`` seals every preview and payload (AES-256-GCM,
  ``encryption.py``).

Figures: microseconds per step (median of ``--rounds`` rounds) and the ratio to ``unsigned``;
then ``snapstate verify``'s time for the signed file (per step) against reading every step's
locals through the reader (the baseline a verification is compared to). Usage:
``python bench/bench_trust.py [--steps 300] [--rounds 5]``. Exit 0 (figures, not a test). The
machine is shared: read the ratios, run it twice.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import snapstate_capture as snap  # noqa: E402
from snapstate_capture.trust import keys
from snapstate_capture.trust.verify import verify_timeline


def agent_loop(steps: int) -> None:
    messages: list[dict] = []
    plan = {"goal": "ship", "subtasks": [f"task {i}" for i in range(20)]}
    for i in range(steps):
        messages.append({"role": "user" if i % 2 else "assistant", "content": "word " * 80})
        counter = i
        snap.checkpoint("tick", i=i)
    assert plan and counter >= 0


def record_once(path: Path, steps: int, *, encrypt: bool) -> float:
    start = time.perf_counter()
    with snap.record(path, name="bench", encrypt=encrypt):
        agent_loop(steps)
    return (time.perf_counter() - start) / steps * 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        base = Path(directory)
        os.environ["XDG_CONFIG_HOME"] = str(base / "config")
        os.environ.pop(keys.KEY_ENV, None)
        keys.generate_key()
        from snapstate_capture.trust import public_keys

        has_public = public_keys.available
        figures: dict[str, list[float]] = {"unsigned": [], "signed": [], "hmac": [],
                                           "encrypted": []}
        for number in range(args.rounds):
            for name in figures:
                if name == "unsigned":  # a key file that does not exist: no key, unsigned
                    os.environ[keys.KEY_ENV] = str(base / "no-such-key")
                else:
                    os.environ.pop(keys.KEY_ENV, None)
                public_keys.available = (lambda: False) if name == "hmac" else has_public
                path = base / f"{name}-{number}.snap"
                figures[name].append(record_once(path, args.steps, encrypt=name == "encrypted"))
        public_keys.available = has_public
        baseline = statistics.median(figures["unsigned"])
        print(f"recording {args.steps} steps, median of {args.rounds} rounds (µs per step):")
        for name, values in figures.items():
            median = statistics.median(values)
            print(f"  {name:10s} {median:9.1f} µs/step   x{median / baseline:5.2f}")
        signed = base / "signed-0.snap"
        key = keys.find_key()
        start = time.perf_counter()
        with snap.open_timeline(signed) as timeline:
            for step in timeline.runs[-1].steps:
                for frame in step.frames:
                    [v.preview for v in frame.locals.values()]
        read = (time.perf_counter() - start) / args.steps * 1e6
        start = time.perf_counter()
        with snap.open_timeline(signed) as timeline:
            report = verify_timeline(timeline, key)
        check = (time.perf_counter() - start) / args.steps * 1e6
        assert report.intact and report.runs[0].signature == "valid"
        print(f"reading every step's previews  {read:9.1f} µs/step")
        print(f"verify (hashes, chain, sig)    {check:9.1f} µs/step   x{check / read:5.2f}")
        print(f"file sizes: unsigned {os.path.getsize(base / 'unsigned-0.snap') / 1024:.0f} KiB,"
              f" encrypted {os.path.getsize(base / 'encrypted-0.snap') / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
