"""Recording into a real PostgreSQL store goes through the local spool and its writer process:
many recorder processes at once (with readers following them), recorders killed with SIGKILL,
and the database restarted (``pg_ctl restart``) in the middle of a recording."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import snapstate_capture as snap
from snapstate_capture.trust.keys import find_key, generate_key
from snapstate_capture.trust.verify import verify_timeline

from tests.conftest import PROGRAMS, ROOT


def _env(spool: Path) -> dict[str, str]:
    # A writer left waiting for a server the session stopped gives up within a minute.
    env = {**os.environ, "SNAPSTATE_SPOOL_DIR": str(spool), "SNAPSTATE_SPOOL_PATIENCE": "60"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _start(program: str, *args: str, spool: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(PROGRAMS / program), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(spool))


def _spools_stored(spool: Path, timeout: float = 60) -> None:
    """Wait until every spool in ``spool`` was stored (its writer deletes it then)."""
    deadline = time.monotonic() + timeout
    while list(spool.glob("*.spool")) or list(spool.glob(".*.new")):
        assert time.monotonic() < deadline, sorted(p.name for p in spool.iterdir())
        time.sleep(0.05)
    assert not list(spool.glob("*.failed"))


def _verified(url: str) -> list:
    with snap.open_timeline(url) as timeline:
        report = verify_timeline(timeline, find_key())
    problems = [(r.name, r.chain_broken_at, r.chain_problem, r.signature) for r in report.runs
                if r.chain_broken_at is not None or r.chain_problem or r.signature != "valid"]
    assert report.runs and not problems, problems
    return report.runs


def _stored_steps(url: str) -> int:
    try:
        with snap.open_timeline(url) as timeline:
            return sum(len(run.steps) for run in timeline.runs)
    except snap.TimelineError:  # the first writer has not made the store yet
        return 0


def test_eight_recorders_and_two_readers_at_once(pg_server, tmp_path):
    url = pg_server.create_database("many_recorders")
    generate_key()  # the agents' user key exists (eight first records racing to make it differ)
    spool = tmp_path / "spool"
    recorders = [_start("store_recorder.py", url, "1000", "0", f"agent-{n}", spool=spool)
                 for n in range(8)]
    readers = [_start("store_reader.py", url, "8", "120", spool=spool) for _ in range(2)]
    outputs = []
    for proc in recorders + readers:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "snapstate:" not in err, err
        outputs.append(out)
    for out in outputs[8:]:  # the readers read the store while it was being written
        assert int(out.split()[-1]) > 8, out
    _spools_stored(spool)
    with snap.open_timeline(url) as timeline:
        runs = timeline.runs
        assert sorted(r.name for r in runs) == [f"agent-{n}" for n in range(8)]
        assert {r.status for r in runs} == {"finished"}
        assert len({r.seq for r in runs}) == 8
        for run in runs:
            assert len(run.steps) == 1000
            assert [s.extra["turn"].preview["repr"] for s in run.steps[995:]] == \
                [str(i) for i in range(995, 1000)]
    assert len(_verified(url)) == 8


def test_recorders_killed_with_sigkill_keep_every_completed_step(pg_server, tmp_path):
    url = pg_server.create_database("killed_recorders")
    generate_key()
    spool = tmp_path / "spool"
    procs = [_start("crash_loop.py", url, spool=spool) for _ in range(30)]
    completed = []
    for proc in procs:  # each has completed a few steps (it printed their indexes) when killed
        last = -1
        while last < 4:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            last = int(line)
        os.kill(proc.pid, signal.SIGKILL)
        completed.append(last)
    for proc in procs:
        proc.wait(timeout=30)  # reaped: its pid is gone, so readers see the run crashed
        assert proc.returncode == -signal.SIGKILL
    _spools_stored(spool)
    with snap.open_timeline(url) as timeline:
        runs = sorted(timeline.runs, key=lambda r: r.pid)
        assert len(runs) == 30
        for run, proc, last in zip(runs, sorted(procs, key=lambda p: p.pid),
                                   [c for _, c in sorted(zip([p.pid for p in procs],
                                                             completed))]):
            assert run.pid == proc.pid
            assert run.status == "crashed"
            assert len(run.steps) >= last + 1
            assert run.steps[last].extra["i"].preview["repr"] == str(last)
    assert len(_verified(url)) == 30


def test_database_restarted_in_the_middle_of_recording(pg_server, tmp_path):
    url = pg_server.create_database("restarted")
    spool = tmp_path / "spool"
    proc = _start("store_recorder.py", url, "600", "0.004", "through-restart", spool=spool)
    for _ in range(100):  # well into the recording, steps already in the store
        assert proc.stdout.readline()
    deadline = time.monotonic() + 30
    while not _stored_steps(url):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pg_server.restart()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.splitlines()[-1] == "done" and "Traceback" not in err
    _spools_stored(spool)
    with snap.open_timeline(url) as timeline:
        (run,) = timeline.runs
        assert run.status == "finished"
        assert len(run.steps) == 600
        assert [s.extra["turn"].preview["repr"] for s in run.steps] == \
            [str(i) for i in range(600)]
    _verified(url)


def test_a_traced_run_is_spooled_while_the_store_is_out_of_reach(pg_server, tmp_path):
    """``--trace calls|lines`` into a store goes through the spool too: with the database not
    there yet, the program runs to its end at once, and its traced steps reach the store once
    the database is there."""
    url = pg_server.url("not_yet")
    generate_key()
    spool = tmp_path / "spool"
    program = tmp_path / "loop.py"
    program.write_text("total = 0\nfor i in range(40):\n    total += i\nprint(total)\n")
    env = {**_env(spool), "SNAPSTATE_SPOOL_WAIT": "1"}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "snapstate_inspect", "record", "-o", url,
                           "--trace", "lines", str(program)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout == "780\n", done.stderr
    assert time.monotonic() - started < 60  # (a connection attempt alone waits 10 s)
    assert "the store has not taken every step yet" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "not recording" not in done.stderr
    assert list(spool.glob("*.spool"))  # the steps wait there
    pg_server.create_database("not_yet")
    _spools_stored(spool)
    with snap.open_timeline(url) as timeline:
        (run,) = timeline.runs
        assert run.status == "finished"
        assert len(run.steps) > 80
        assert run.steps[-1].frames[-1].locals["total"].repr == "780"
    _verified(url)


def test_a_traced_recorder_killed_with_sigkill_keeps_its_steps(pg_server, tmp_path):
    url = pg_server.create_database("traced_killed")
    generate_key()
    spool = tmp_path / "spool"
    program = tmp_path / "slow.py"
    program.write_text("import time\ntotal = 0\nfor i in range(10_000):\n    total += i\n"
                       "    print(i, flush=True)\n    time.sleep(0.01)\n")
    proc = subprocess.Popen([sys.executable, "-m", "snapstate_inspect", "record", "-o", url,
                             "--trace", "lines", str(program)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_env(spool))
    for _ in range(60):  # well into the loop
        assert proc.stdout.readline()
    time.sleep(0.5)  # its trace writer has handed some chunks on (every 0.25 s)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    _spools_stored(spool)  # the trace writer spools what it had, its spool writer stores it
    with snap.open_timeline(url) as timeline:
        (run,) = timeline.runs
        assert run.status == "crashed"
        assert len(run.steps) > 100
    _verified(url)


CUT_SPOOL = """
import glob, os, resource, signal, sys
import snapstate_capture as snap
url, spool, ledger = sys.argv[1:4]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

@snap.effect(name="fetch")
def fetch(i):
    with open(ledger, "a") as handle:
        handle.write(f"{i}\\n")
    return i * i

with snap.record(url, name="cut"):
    for i in range(10):
        if i == 4:  # the spool's disk is full from here on
            size = max(os.path.getsize(p) for p in glob.glob(os.path.join(spool, "*.spool")))
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        fetch(i)
"""


def test_a_run_cut_short_by_a_full_spool_is_marked_truncated_and_not_resumed(pg_server,
                                                                              tmp_path):
    """The run's end could not be spooled either, so the store kept it ``running``; taken for
    crashed, its resume ran again the effects the program had run unrecorded (helper-40: 2 of
    2). The end goes to the writer process on its pipe now."""
    url = pg_server.create_database(f"cut_{time.monotonic_ns()}")
    spool, ledger = tmp_path / "spool", tmp_path / "ledger.txt"
    spool.mkdir()
    (tmp_path / "cut.py").write_text(CUT_SPOOL)
    done = subprocess.run([sys.executable, str(tmp_path / "cut.py"), url, str(spool),
                           str(ledger)], capture_output=True, text=True, env=_env(spool),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "recording stopped at step 4" in done.stderr, done.stderr
    _spools_stored(spool)
    with snap.open_timeline(url) as timeline:
        run = timeline.runs[-1]
        assert run.status == "truncated", run.status
        assert len(run.steps) == 4
    resumed = subprocess.run([sys.executable, "-m", "snapstate_inspect", "resume", url],
                             capture_output=True, text=True, env=_env(spool), timeout=120)
    assert resumed.returncode != 0 and "truncated" in resumed.stderr, resumed.stderr
    assert ledger.read_text().split() == [str(i) for i in range(10)]  # each effect once
