"""Every field read from a file is type- and bound-checked before use: a number where a trace
chunk's bytes belong is never turned into ``bytes(n)``, text where its step numbers belong is
one clear line, not an internal error (issue 22, point 7)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import snapstate_capture as snap
from snapstate_capture.errors import TimelineError
from snapstate_capture.trust.verify import verify_timeline
from tests.conftest import ROOT, record_traced_loop
from tests.hostile import connect


#: ``-c _PEAK_OF FD ARGV...``: runs ARGV as its own child and writes that child's peak resident
#: memory (bytes) to file descriptor FD.
#: A child spawned straight from the test worker would count the worker's own peak: Linux
#: carries the old address space's high-water mark across exec (and vfork shares the parent's).
_PEAK_OF = """
import os, sys
fd = int(sys.argv[1])
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
os.write(fd, str(usage.ru_maxrss * 1024).encode())
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _measured_cli(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """``snapstate ARGS`` in a grandchild; its result and its own peak resident memory (bytes),
    measured by a small launcher process (``_PEAK_OF``) so the test worker's size is not in it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    read_end, write_end = os.pipe()
    done = subprocess.run(
        [sys.executable, "-c", _PEAK_OF, str(write_end), sys.executable, "-m",
         "snapstate_inspect", *args],
        env=env, capture_output=True, text=True, pass_fds=(write_end,))
    os.close(write_end)
    with os.fdopen(read_end) as peak:
        return done, int(peak.read() or 0)


@pytest.fixture
def traced(tmp_path, no_key_can_be_made):
    path = tmp_path / "traced.snap"
    record_traced_loop(path, 50)
    return path


MUTATIONS = {
    "data is a huge integer": ("data", 2 ** 62),
    "data is a large integer": ("data", 10 ** 9),
    "data is text": ("data", "not bytes"),
    "first is text": ("first", "abc"),
    "count is text": ("count", "many"),
    "count is negative": ("count", -5),
    "count is enormous": ("count", 2 ** 40),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_malformed_trace_chunk_is_one_clear_line(traced, mutation):
    column, value = MUTATIONS[mutation]
    conn = connect(traced)
    assert conn.execute(f"UPDATE trace_chunks SET {column}=?", (value,)).rowcount
    conn.close()
    for command in (("show", str(traced), "--step", "3"), ("ls", str(traced)),
                    ("verify", str(traced))):
        done, peak = _measured_cli(*command)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
        assert "MemoryError" not in done.stderr
        assert done.returncode in (0, 1, 2)
        assert peak < 300 * 1024 * 1024  # bytes(10**9) would take 976 MB
        if done.returncode == 2:
            assert done.stderr.count("\n") == 1 and str(traced) in done.stderr
    with snap.open_timeline(traced) as timeline:
        run = timeline.runs[-1]
        try:
            steps = list(run.steps)
        except TimelineError as exc:  # the reader's documented error, naming the file
            assert str(traced) in str(exc)
        else:
            assert len(steps) <= run.step_count
        assert not verify_timeline(timeline, None).intact
