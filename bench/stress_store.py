"""A stress loop for the shared store (issue 18): rounds of N recorders at once into one fresh
PostgreSQL database, with two readers following them, then ``verify`` of every run.

Run from the repository root (it starts its own PostgreSQL server, as the tests do)::

    python bench/stress_store.py                       # 20 rounds of 8 recorders x 500 steps
    python bench/stress_store.py --rounds 5 --recorders 8 --steps 1000 --hogs 3

Each round prints its wall and CPU time (recorders and readers; the spool writers run in
their own sessions and are not counted), the step counts stored, spools left behind, and every
run whose chain, seal or signature does not verify; the last line counts the bad rounds (exit 1 when there are any).
``--hogs N`` adds N busy loops for the round's length, for the load at which races show.
The spool writers' stderr (retries, re-attachments, spools taken as orphans; ``SNAPSTATE_DEBUG``
is set) is kept per recorder under ``--logs``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _round(server, number: int, args, key, logs: Path) -> bool:
    import snapstate_capture as snap
    from snapstate_capture.trust.verify import verify_timeline

    url = server.create_database(f"stress_{number}")
    spool = logs / f"spool-{number}"
    env = {**os.environ, "SNAPSTATE_SPOOL_DIR": str(spool), "SNAPSTATE_SPOOL_PATIENCE": "60",
           "PYTHONPATH": str(ROOT), "SNAPSTATE_DEBUG": "1"}
    programs = ROOT / "tests" / "programs"
    wall, cpu = time.perf_counter(), _children_cpu()
    errs = [open(logs / f"round{number}-recorder{n}.err", "w") for n in range(args.recorders)]
    recorders = [subprocess.Popen([sys.executable, str(programs / "store_recorder.py"), url,
                                   str(args.steps), "0", f"agent-{n}"],
                                  stdout=subprocess.DEVNULL, stderr=errs[n], env=env)
                 for n in range(args.recorders)]
    readers = [subprocess.Popen([sys.executable, str(programs / "store_reader.py"), url,
                                 str(args.recorders), "300"], stdout=subprocess.DEVNULL, env=env)
               for _ in range(2)]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.hogs)]
    for proc in recorders + readers:
        proc.wait()
    for hog in hogs:
        hog.kill()
        hog.wait()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and [p for p in spool.glob("*") if p.suffix in
                                           (".spool", ".new")]:
        time.sleep(0.05)
    wall, cpu = time.perf_counter() - wall, _children_cpu() - cpu
    for handle in errs:
        handle.close()
    left = sorted(p.name for p in spool.iterdir())
    with snap.open_timeline(url) as timeline:
        report = verify_timeline(timeline, key)
        counts = sorted({len(run.steps) for run in timeline.runs})
    problems = [(r.name, r.chain_broken_at, r.chain_problem, r.signature) for r in report.runs
                if r.chain_broken_at is not None or r.chain_problem or r.signature != "valid"]
    print(f"round {number}: wall {wall:.1f} s, cpu {cpu:.1f} s, runs {len(report.runs)}, "
          f"steps {counts}, spools left {left}, problems {problems}", flush=True)
    return not problems and not left and len(report.runs) == args.recorders \
        and counts == [args.steps]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--recorders", type=int, default=8)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--hogs", type=int, default=0)
    parser.add_argument("--logs", type=Path, default=None)
    args = parser.parse_args()
    from snapstate_capture.trust.keys import find_key, generate_key
    from tests.store.pg_server import PgServer

    logs = args.logs or Path(tempfile.mkdtemp(prefix="snapstate-stress-"))
    logs.mkdir(parents=True, exist_ok=True)
    config = logs / "config"  # a user key of its own, made once (recorders sign with it)
    os.environ["XDG_CONFIG_HOME"] = str(config)
    key = find_key() or generate_key()
    print(f"load {os.getloadavg()[0]:.1f}; logs in {logs}", flush=True)
    server = PgServer().start()
    try:
        bad = sum(not _round(server, number, args, key, logs) for number in range(args.rounds))
    finally:
        server.stop()
    print(f"bad rounds: {bad} of {args.rounds} (load {os.getloadavg()[0]:.1f})")
    if not args.logs and not bad:
        shutil.rmtree(logs, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
