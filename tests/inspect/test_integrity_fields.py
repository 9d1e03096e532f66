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


def _measured_cli(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """``snapstate ARGS`` in a child; its result and its own peak resident memory (bytes)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "snapstate_inspect", *args], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = child.stdout.read(), child.stderr.read()  # small: no deadlock between them
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return subprocess.CompletedProcess(args, child.returncode, out, err), usage.ru_maxrss * 1024


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
