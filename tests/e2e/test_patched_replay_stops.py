"""A run recorded with ``--patch-nondeterminism``, stopped at a step: the stop's own work is not
the program's. A traced fork names its new run with ``uuid4``, which reads ``os.urandom``
(patched) from ``uuid.py``: it was journaled as the program's call and the fork diverged at
the next clock read; ``--pdb`` reads its commands with ``input`` (patched) from ``cmd.py``:
the first command ended the replay as a divergence (helper-36, 3 of 3 stops each)."""

from __future__ import annotations

from tests.conftest import run_cli

PROGRAM = """\
import time

def work(n):
    t = time.time()
    return n * 2, t

def main():
    out = []
    for i in range(3):
        out.append(work(i))
    print(len(out))

main()
"""


def _recorded(tmp_path):
    (tmp_path / "clocks.py").write_text(PROGRAM)
    done = run_cli("record", "--quiet", "--patch-nondeterminism", "-o", "clocks.snap",
                   "clocks.py", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "3\n", done.stderr
    return tmp_path / "clocks.snap"


def test_a_live_fork_of_a_patched_traced_run_goes_on_as_a_fork(tmp_path):
    path = _recorded(tmp_path)
    for stop in ("5", "16"):
        done = run_cli("replay", str(path), "--to", stop, "--live", cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "then continued live as fork" in done.stdout, done.stdout
        assert "(finished)" in done.stdout


def test_pdb_reads_its_commands_in_a_patched_run(tmp_path):
    path = _recorded(tmp_path)
    done = run_cli("replay", str(path), "--to", "16", "--pdb", input="p n\nc\n",
                   cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(Pdb) 1\n" in done.stdout  # the stopped frame's local, as recorded
    assert "no divergence" in done.stdout, done.stdout
    assert "divergence at" not in done.stdout + done.stderr


CLOCKED = """\
import time

def started():
    return time.monotonic()

def report(start):
    return round(start, 3)

report(started())
"""


def test_a_divergence_in_clock_readings_names_the_option_that_journals_them(tmp_path):
    """A value read from the clock differs on replay unless the run was recorded with
    ``--patch-nondeterminism``; the divergence says so when every differing value is a
    fractional number (helper-36: tenacity's ``RetryCallState.start_time``)."""
    (tmp_path / "clocked.py").write_text(CLOCKED)
    plain = run_cli("record", "--quiet", "--trace", "calls", "-o", "plain.snap", "clocked.py",
                    cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    diverged = run_cli("replay", "plain.snap", cwd=tmp_path, timeout=120)
    assert diverged.returncode == 1, diverged.stdout + diverged.stderr
    assert "recorded with --patch-nondeterminism" in diverged.stdout + diverged.stderr
    patched = run_cli("record", "--quiet", "--trace", "calls", "--patch-nondeterminism", "-o",
                      "patched.snap", "clocked.py", cwd=tmp_path)
    assert patched.returncode == 0, patched.stderr
    replayed = run_cli("replay", "patched.snap", cwd=tmp_path, timeout=120)
    assert "no divergence" in replayed.stdout, replayed.stdout + replayed.stderr
