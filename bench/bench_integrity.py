"""Stress: nothing lost, nothing forged (issue 22). Real processes, real files, in one go:

1. **Kills** — ``--kills`` recorders (checkpoint, traced and effect programs:
   ``tests/programs/integrity_program.py``) SIGKILLed at random moments: while the file is
   created (a fresh path), while steps are written, and while the run ends and the file closes.
   After each kill every reader must open the file (``open_timeline``, ``ls``, ``show``) and
   every step the program printed as complete must be in it.
2. **Races** — ``--races`` rounds of 6 writers starting together on a fresh file: every
   writer's run must be there with every step it printed.
3. **Mutants** — ``--mutants`` copies of recorded files (signed, unsigned, traced, effects,
   encrypted) with one stored field changed (a column set to a hostile value or another row's,
   a row or blob deleted, bytes flipped), each read by ``ls``, ``show``, ``verify`` and the
   reader in worker processes with a 200 MB memory limit and a timeout. A mutant whose
   reader-visible content (``content_view``) differs from the original must fail ``verify``;
   one whose content reads back identical is counted apart.

Prints one line per goal (all 0) and exits 0 when every goal holds, 1 otherwise. Usage::

    python bench/bench_integrity.py [--kills 300] [--races 6] [--mutants 2000] [--jobs 2]
                                    [--seed 22] [--workdir DIR]

The suite runs a shorter version (``tests/e2e/test_integrity_stress.py``). On the shared
2-core machine a full run takes several minutes; read ``uptime`` with it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PROGRAM = ROOT / "tests" / "programs" / "integrity_program.py"
MODES = ("checkpoint", "traced", "effect")
#: Memory a reader may use beyond its start (bytes), and seconds one mutant may take.
MEMORY_LIMIT = 200 * 1024 * 1024
MUTANT_TIMEOUT = 60


@dataclass
class Tally:
    """What the stress found; every ``goal_*`` count must be 0."""

    kills: int = 0
    kill_moments: Counter = field(default_factory=Counter)
    goal_completed_steps_lost: int = 0
    goal_unreadable_files: int = 0
    race_writers: int = 0
    goal_runs_lost_to_races: int = 0
    mutants: int = 0
    identical_content: int = 0
    identical_content_verify_passes: int = 0
    goal_mutants_verify_passes: int = 0
    goal_tracebacks: int = 0
    goal_hangs: int = 0
    goal_memory_over_limit: int = 0
    examples: list[str] = field(default_factory=list)

    def note(self, goal: str, what: str) -> None:
        setattr(self, goal, getattr(self, goal) + 1)
        if len(self.examples) < 40:
            self.examples.append(f"{goal}: {what}")

    def merge(self, other: Tally) -> None:
        for name, value in vars(other).items():
            if isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)
        self.kill_moments.update(other.kill_moments)
        self.examples.extend(other.examples[:max(0, 40 - len(self.examples))])

    def goals(self) -> dict[str, int]:
        return {name[5:]: value for name, value in vars(self).items()
                if name.startswith("goal_")}

    def ok(self) -> bool:
        return not any(self.goals().values())


def _env(config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SNAPSTATE_KEY")}
    env.update(PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(config))
    return env


def _start(path: Path, mode: str, steps: int, config: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(PROGRAM), str(path), mode, str(steps), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(config))


_CLI_LOCK = threading.Lock()  # redirecting stdout is process-wide: one command at a time


def _in_process_cli(*argv: str) -> tuple[int, str, str]:
    """Run ``snapstate ARGV`` in this process (exit code, stdout, stderr)."""
    from snapstate_inspect.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _CLI_LOCK, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def _traceback_in(text: str) -> bool:
    return "Traceback (most recent call last)" in text or "internal error" in text


# -- 1. kills ------------------------------------------------------------------------------------
def _read_progress(child: subprocess.Popen, lines: list[str], done: threading.Event) -> None:
    assert child.stdout is not None
    for line in child.stdout:
        lines.append(line.strip())
        if line.strip() == "closing":
            done.set()
    done.set()


def _completed(lines: list[str]) -> tuple[list[int], int]:
    steps = [int(line.split()[1]) for line in lines if line.startswith("step ")]
    effects = max([int(line.split()[1]) for line in lines if line.startswith("effects ")],
                  default=0)
    return steps, effects


def kill_trial(path: Path, mode: str, moment: str, rng: random.Random, config: Path,
               tally: Tally) -> None:
    """Record into ``path`` and SIGKILL the recorder at ``moment`` ("create": soon after it
    starts, the file created or being created; "steps": while it writes; "close": after the
    last step, while the run ends and the file closes); then check what readers see."""
    steps = 60 if moment == "close" else 400
    child = _start(path, mode, steps, config)
    lines: list[str] = []
    closing = threading.Event()
    reader = threading.Thread(target=_read_progress, args=(child, lines, closing), daemon=True)
    reader.start()
    if moment == "create":
        time.sleep(rng.uniform(0.0, 1.2))  # interpreter start, imports, key, file creation
    elif moment == "steps":
        wanted = rng.randrange(1, 200)
        deadline = time.monotonic() + 60
        while sum(line.startswith("step ") for line in lines) < wanted and child.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.01))
    else:
        closing.wait(60)
        time.sleep(rng.uniform(0.0, 0.15))
    child.send_signal(signal.SIGKILL)
    child.wait()
    reader.join(5)
    tally.kills += 1
    tally.kill_moments[f"{mode}/{moment}"] += 1
    check_after_kill(path, child.pid, lines, mode, tally)


def check_after_kill(path: Path, pid: int, lines: list[str], mode: str, tally: Tally) -> None:
    """Readers open ``path``; the run of process ``pid`` holds every step it printed."""
    import snapstate_capture as snap
    from snapstate_capture.errors import SnapStateError

    printed, effects = _completed(lines)
    if not path.exists():
        if printed:
            tally.note("goal_completed_steps_lost", f"{path.name}: file gone, {len(printed)} "
                                                    f"steps printed")
        return
    for command in ("ls", "show"):
        code, out, err = _in_process_cli(command, str(path))
        if command == "show" and code == 2 and not printed and err.rstrip().endswith(
                ("has no steps", "holds no runs")):
            continue  # killed before its first step (or its run row): readable, nothing lost
        if code != 0 or _traceback_in(out + err):
            tally.note("goal_unreadable_files", f"{path.name} ({mode}): {command} exit {code}: "
                                                f"{err.strip()[:160]}")
            return
    try:
        with snap.open_timeline(path) as timeline:
            mine = [run for run in timeline.runs if run.pid == pid]
            if not mine:
                if printed:
                    tally.note("goal_completed_steps_lost",
                               f"{path.name}: run of pid {pid} missing, {len(printed)} printed")
                return
            run = mine[0]
            count = len(run.steps)
            missing = [i for i in printed if i >= count]
            labels_ok = all(run.steps[i].label == "turn" for i in printed[-3:] if i < count)
            journal = len(timeline.engine.effect_rows(run.id))
            if missing or not labels_ok or journal < effects:
                tally.note("goal_completed_steps_lost",
                           f"{path.name} ({mode}): {len(missing)} printed steps missing "
                           f"(has {count}), journal {journal} < {effects}"
                           if missing or journal < effects else f"{path.name}: wrong step")
            for step in run.steps[max(0, count - 3):count]:
                for frame in step.frames:
                    for value in frame.locals.values():
                        value.preview  # noqa: B018 - the last steps' values must read
    except SnapStateError as exc:
        tally.note("goal_unreadable_files", f"{path.name} ({mode}): {exc}")
    except Exception as exc:  # noqa: BLE001 - a bug: counted, shown
        tally.note("goal_tracebacks", f"{path.name} ({mode}): {type(exc).__name__}: {exc}")


def run_kills(count: int, rng: random.Random, work: Path, config: Path, jobs: int) -> Tally:
    """``count`` kill trials, ``jobs`` at a time; a third on fresh paths (kills at create)."""
    tally = Tally()
    plans = []
    for number in range(count):
        moment = ("create", "steps", "close")[number % 3]
        mode = MODES[(number // 3) % len(MODES)]
        fresh = moment == "create" or rng.random() < 0.3
        name = f"kill{number}.snap" if fresh else f"shared-{mode}-{number % 7}.snap"
        plans.append((work / name, mode, moment, random.Random(rng.random())))
    lock = threading.Lock()
    by_path: dict[Path, threading.Lock] = {}

    def one(plan: tuple) -> None:
        path, mode, moment, own = plan
        with lock:
            path_lock = by_path.setdefault(path, threading.Lock())
        local = Tally()
        with path_lock:  # one recorder per shared file at a time: its runs are checked by pid
            kill_trial(path, mode, moment, own, config, local)
        with lock:
            tally.merge(local)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, plans))
    return tally


# -- 2. races ------------------------------------------------------------------------------------
def run_races(rounds: int, work: Path, config: Path, writers: int = 6) -> Tally:
    """``rounds`` times: ``writers`` recorders start together on a new file."""
    import snapstate_capture as snap

    tally = Tally()
    for number in range(rounds):
        path, go = work / f"race{number}.snap", work / f"race{number}.go"
        children = [_start(path, MODES[i % len(MODES)] if i % 2 else "checkpoint", 25, config,
                           str(go)) for i in range(writers)]
        for child in children:
            assert child.stdout is not None
            child.stdout.readline()  # "ready"
        go.write_text("")
        results = [(child, *child.communicate(timeout=300)) for child in children]
        tally.race_writers += writers
        try:
            with snap.open_timeline(path) as timeline:
                runs = {run.pid: run for run in timeline.runs}
                for child, out, err in results:
                    printed, _ = _completed(out.splitlines())
                    run = runs.get(child.pid)
                    if run is None or "not recording" in err or len(run.steps) < len(printed) \
                            or run.status != "finished":
                        tally.note("goal_runs_lost_to_races",
                                   f"{path.name}: pid {child.pid} "
                                   f"{'missing' if run is None else run.status} {err[:120]}")
        except Exception as exc:  # noqa: BLE001
            tally.note("goal_unreadable_files", f"{path.name}: {exc}")
    return tally


# -- 3. mutants ----------------------------------------------------------------------------------
def record_bases(work: Path, config: Path) -> list[Path]:
    """The files mutated: signed checkpoints with effects, unsigned, traced, encrypted."""
    env = _env(config)
    bases = []
    for name, mode, extra_env in (("signed", "effect", {}), ("traced", "traced", {}),
                                  ("checkpoints", "checkpoint", {})):
        path = work / f"base-{name}.snap"
        subprocess.run([sys.executable, str(PROGRAM), str(path), mode, "12"], env={
            **env, **extra_env}, check=True, capture_output=True, timeout=300)
        bases.append(path)
    unsigned, blocker = work / "base-unsigned.snap", work / "no-key-here"
    blocker.write_text("")  # a config directory inside a regular file: no key can be made
    subprocess.run([sys.executable, str(PROGRAM), str(unsigned), "effect", "8"],
                   env={**env, "XDG_CONFIG_HOME": str(blocker / "config")},
                   check=True, capture_output=True, timeout=300)
    bases.append(unsigned)
    encrypted = work / "base-encrypted.snap"
    script = ("import sys, snapstate_capture as snap\n"
              "@snap.effect(name='ask')\n"
              "def ask(prompt):\n    return {'reply': prompt[::-1]}\n"
              "with snap.record(sys.argv[1], encrypt=True):\n"
              "    notes = []\n"
              "    for i in range(6):\n"
              "        notes.append(ask(f'PROMPT_{i:04x}'))\n"
              "        snap.checkpoint('turn', i=i)\n")
    done = subprocess.run([sys.executable, "-c", script, str(encrypted)], env=env,
                          capture_output=True, timeout=300, text=True)
    if done.returncode == 0 and encrypted.exists():
        bases.append(encrypted)
    return bases


_HOSTILE = (None, 0, -1, 1, 7, 10**9, 2**62, -2**63, 1.5, float("inf"), "", "abc", "5",
            "running", "finished", "crashed", "truncated", b"", b"\x00" * 16, b"\xff" * 48,
            "{}", "[]", '{"p": "00"}', "null", "x" * 5000)


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]


def _keys(conn: sqlite3.Connection, table: str) -> list[str]:
    pk = [row[1] for row in sorted(conn.execute(f"PRAGMA table_info({table})"),
                                   key=lambda r: r[5]) if row[5]]
    return pk or ["rowid"]


def mutate(source: Path, target: Path, rng: random.Random) -> str:
    """Copy ``source`` to ``target`` with one stored thing changed; return what was done."""
    shutil.copyfile(source, target)
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        tables = [t for t in _tables(conn) if conn.execute(f"SELECT count(*) FROM {t}")
                  .fetchone()[0]]
        weights = {"blobs": 3, "steps": 3, "runs": 4, "trace_chunks": 2, "effects": 2,
                   "meta": 1}
        table = rng.choices(tables, [weights.get(t, 1) for t in tables])[0]
        keys = _keys(conn, table)
        rows = conn.execute(f"SELECT {', '.join(keys)} FROM {table}").fetchall()
        row = rng.choice(rows)
        where = " AND ".join(f"{k} IS ?" for k in keys)
        roll = rng.random()
        if roll < 0.08:
            conn.execute(f"DELETE FROM {table} WHERE {where}", row)
            return f"delete a {table} row"
        column = rng.choice(_columns(conn, table))
        old = conn.execute(f"SELECT {column} FROM {table} WHERE {where}", row).fetchone()[0]
        if roll < 0.45:
            new = rng.choice(_HOSTILE)
        elif roll < 0.65:
            others = [r[0] for r in conn.execute(f"SELECT DISTINCT {column} FROM {table}")
                      if r[0] != old]
            new = rng.choice(others) if others else rng.choice(_HOSTILE)
        else:
            new = _nudge(old, rng)
        try:
            conn.execute(f"UPDATE {table} SET {column}=? WHERE {where}", (new, *row))
        except sqlite3.Error as exc:  # a constraint: try deleting instead
            conn.execute(f"DELETE FROM {table} WHERE {where}", row)
            return f"delete a {table} row ({exc})"
        shown = repr(new)[:40]
        return f"{table}.{column} = {shown}"
    finally:
        conn.close()


def _nudge(old: Any, rng: random.Random) -> Any:
    """A small change of ``old``: ±1 for numbers, one character or byte changed, truncation."""
    if isinstance(old, bool) or old is None:
        return 1
    if isinstance(old, int):
        return old + rng.choice((-1, 1))
    if isinstance(old, float):
        return old + rng.choice((-1.0, 1.0, 1e-6))
    if isinstance(old, str):
        if not old:
            return "x"
        i = rng.randrange(len(old))
        if rng.random() < 0.2:
            return old[:i]
        return old[:i] + chr((ord(old[i]) + 1) % 0x7F or 0x41) + old[i + 1:]
    if isinstance(old, bytes):
        if not old:
            return b"\x01"
        data = bytearray(old)
        if rng.random() < 0.2:
            return bytes(data[:rng.randrange(len(data))])
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data)
    return None


def content_view(path: Path) -> Any:
    """Everything a reader shows of ``path``, as JSON-able data (errors as text): runs, steps,
    frames, sources, values' previews and payload bytes, the effect journal."""
    import snapstate_capture as snap
    from snapstate_capture.errors import SnapStateError

    out: list[Any] = []

    def guard(what: Any) -> Any:
        try:
            return what()
        except SnapStateError as exc:
            return f"error: {type(exc).__name__}: {exc.problem if hasattr(exc, 'problem') else exc}"

    def value(v: Any) -> Any:
        def payload() -> Any:
            if not v.payload_key:
                return None
            return hashlib.blake2b(v.timeline.blob(v.payload_key), digest_size=8).hexdigest()
        return [guard(lambda: v.preview), guard(payload), v.serializer]

    try:
        with snap.open_timeline(path) as timeline:
            for run in timeline.runs:
                out.append(["run", run.id, run.name, run.status, run.stored_status, run.started,
                            run.ended, run.pid, run.host, run.entry, run.env,
                            run.parent and [run.parent.run_id, run.parent.step], run.error,
                            run.step_count])
                count = guard(lambda: len(run.steps))
                out.append(["steps", count])
                if not isinstance(count, int):
                    continue
                for index in range(count):
                    def step_view(index: int = index) -> Any:
                        step = run.steps[index]
                        return [step.index, step.kind, step.label, step.wall_time,
                                step.mono_time, step.thread, step.task, step.function,
                                step.filename, step.lineno, step.depth, step.n_changed,
                                step.errors,
                                [[f.function, f.filename, f.lineno, guard(lambda f=f: f.source),
                                  {n: value(v) for n, v in f.locals.items()}]
                                 for f in step.frames],
                                {n: value(v) for n, v in step.extra.items()}]
                    out.append(guard(step_view))
                out.append(["effects", guard(lambda: timeline.engine.effect_rows(run.id))])
    except SnapStateError as exc:
        return f"unreadable: {exc.problem if hasattr(exc, 'problem') else exc}"
    return json.loads(json.dumps(out, default=repr))


def _limit_memory() -> None:
    """Worker start: address space limited to what it uses now plus ``MEMORY_LIMIT``."""
    with open("/proc/self/status") as handle:
        vm = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmSize"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + MEMORY_LIMIT, vm + MEMORY_LIMIT))
    os.environ["SNAPSTATE_DEBUG"] = "0"


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def check_mutant(job: tuple[str, str, str, int, Any]) -> dict[str, Any]:
    """In a worker: mutate, read with every tool, verify; classify the outcome."""
    source, target, config, seed, original = job
    os.environ["XDG_CONFIG_HOME"] = config
    rng = random.Random(seed)
    result: dict[str, Any] = {"what": "", "outcome": ""}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(MUTANT_TIMEOUT)
    try:
        result["what"] = mutate(Path(source), Path(target), rng)
        texts = []
        for command in (("ls", target), ("show", target), ("verify", target),
                        ("show", target, "--step", "3")):
            code, out, err = _in_process_cli(*command)
            texts.append(out + err)
            if command[0] == "verify":
                result["verify_exit"] = code
        if any(_traceback_in(t) for t in texts):
            result["outcome"] = "traceback"
            result["detail"] = next(t for t in texts if _traceback_in(t))[-300:]
            return result
        view = content_view(Path(target))
        result["identical"] = view == original
        result["outcome"] = "ok"
    except _Timeout:
        result["outcome"] = "hang"
    except MemoryError:
        result["outcome"] = "memory"
    except Exception as exc:  # noqa: BLE001 - a bug in a reader: counted and shown
        import traceback

        result["outcome"] = "traceback"
        result["detail"] = "".join(traceback.format_exception(exc))[-600:]
    finally:
        signal.alarm(0)
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(target + suffix)
    return result


def run_mutants(count: int, rng: random.Random, work: Path, config: Path, jobs: int) -> Tally:
    tally = Tally()
    bases = record_bases(work, config)
    os.environ["XDG_CONFIG_HOME"] = str(config)
    originals = {str(base): content_view(base) for base in bases}
    jobs_list = []
    for number in range(count):
        base = bases[number % len(bases)]
        jobs_list.append((str(base), str(work / f"mutant{number}.snap"), str(config),
                          rng.randrange(2**32), originals[str(base)]))
    with ProcessPoolExecutor(jobs, initializer=_limit_memory) as pool:
        for job, result in zip(jobs_list, pool.map(check_mutant, jobs_list, chunksize=4)):
            tally.mutants += 1
            label = f"{Path(job[0]).name}: {result['what']}"
            outcome = result["outcome"]
            if outcome == "traceback":
                tally.note("goal_tracebacks", f"{label}: {result.get('detail', '')}")
            elif outcome == "hang":
                tally.note("goal_hangs", label)
            elif outcome == "memory":
                tally.note("goal_memory_over_limit", label)
            elif result.get("identical"):
                tally.identical_content += 1
                tally.identical_content_verify_passes += result.get("verify_exit") == 0
            elif result.get("verify_exit") == 0:
                tally.note("goal_mutants_verify_passes", label)
    return tally


# -- main ----------------------------------------------------------------------------------------
def run_all(*, kills: int, races: int, mutants: int, jobs: int, seed: int,
            work: Path) -> Tally:
    """Everything, in one go, in directory ``work``; returns the merged tally."""
    rng = random.Random(seed)
    config = work / "config"
    config.mkdir(parents=True, exist_ok=True)
    tally = Tally()
    for part, run in (("races", lambda: run_races(races, work, config)),
                      ("kills", lambda: run_kills(kills, rng, work, config, jobs)),
                      ("mutants", lambda: run_mutants(mutants, rng, work, config, jobs))):
        started = time.perf_counter(), time.process_time()
        tally.merge(run())
        wall, cpu = time.perf_counter() - started[0], time.process_time() - started[1]
        print(f"{part:8} done: {wall:7.1f} s wall, {cpu:6.1f} s CPU (this process)",
              flush=True)
    return tally


def report(tally: Tally) -> str:
    lines = [f"kills {tally.kills} ({', '.join(f'{k} {v}' for k, v in sorted(tally.kill_moments.items()))})",
             f"race writers {tally.race_writers}, mutants {tally.mutants}",
             f"mutants whose content reads back identical: {tally.identical_content} "
             f"(verify passes {tally.identical_content_verify_passes} of them)"]
    lines += [f"{name.replace('_', ' '):28} {value}  (goal 0)"
              for name, value in tally.goals().items()]
    lines += [f"  - {example}" for example in tally.examples]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=300)
    parser.add_argument("--races", type=int, default=6, help="rounds of 6 writers")
    parser.add_argument("--mutants", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="snap-integrity-") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        tally = run_all(kills=args.kills, races=args.races, mutants=args.mutants,
                        jobs=args.jobs, seed=args.seed, work=work)
    print(report(tally))
    return 0 if tally.ok() else 1


if __name__ == "__main__":
    raise SystemExit(main())
