"""`snapstate record` runs a program as python would and ends the run the way the program ended:
exit codes, output, status and the recorded steps, for each way a program can end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import snapstate_capture as snap
from tests.conftest import PROGRAMS, ROOT, run_cli, run_python

PROGRAM = str(PROGRAMS / "trace_ends.py")


def _run(tmp_path, how, *extra, trace="lines"):
    out = tmp_path / f"{how}.snap"
    proc = run_cli("record", "-o", str(out), "--trace", trace,
                   "--include", "*/trace_ends.py", *extra, PROGRAM, how, cwd=tmp_path)
    return proc, out


def _last_run(path):
    timeline = snap.open_timeline(path)
    return timeline, timeline.runs[-1]


def test_normal_end_same_output_and_argv_as_python(tmp_path):
    plain = run_python(PROGRAM, "stdin", input="hello\n", cwd=tmp_path)
    out = tmp_path / "n.snap"
    proc = run_python("-m", "snapstate_inspect", "record", "-o", str(out),
                      "--include", "*/trace_ends.py", PROGRAM, "stdin",
                      input="hello\n", cwd=tmp_path)
    assert proc.returncode == plain.returncode == 0
    assert proc.stdout == plain.stdout
    assert "argv ['stdin'] name __main__ line hello" in proc.stdout
    assert f"snapstate inspect {out}" in proc.stderr
    timeline, run = _last_run(out)
    with timeline:
        assert run.status == "finished"
        assert run.entry["kind"] == "script"
        steps = list(run.steps)
        kinds = {s.kind for s in steps}
        assert {"call", "line", "return"} <= kinds
        returns = [s for s in steps if s.kind == "return" and s.function == "work"]
        assert returns[0].extra["return"].repr == str(sum(i * i for i in range(10)))
        # the step after `total += i * i` ran shows the new total in work's frame
        work_lines = [s for s in steps if s.function == "work" and s.kind == "line"]
        totals = [s.frames[-1].locals["total"].repr for s in work_lines
                  if "total" in s.frames[-1].locals]
        assert "285" in totals and "0" in totals
        # callers are on the stack: main's frame holds `data`, captured as a preview
        inner = work_lines[-1]
        assert [f.function for f in inner.frames][-2:] == ["main", "work"]
        assert inner.frames[-2].locals["data"].preview["type"] == "builtins.dict"


def test_sys_exit_code_and_status(tmp_path):
    proc, out = _run(tmp_path, "exit")
    assert proc.returncode == 3
    assert "result 285" in proc.stdout
    timeline, run = _last_run(out)
    with timeline:
        assert run.status == "failed"
        assert run.error["type"] == "builtins.SystemExit"


def test_uncaught_exception_traceback_and_exception_step(tmp_path):
    proc, out = _run(tmp_path, "raise", trace="calls")
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert 'raise ValueError(f"bad {data[\'how\']}")' in proc.stderr
    assert "ValueError: bad raise" in proc.stderr
    assert "runpy" not in proc.stderr and "snapstate_inspect" not in proc.stderr
    timeline, run = _last_run(out)
    with timeline:
        assert run.status == "failed"
        last = run.steps[-1]
        assert last.kind == "exception" and last.label == "ValueError"
        frame = last.frames[-1]
        assert frame.function == "main"
        assert frame.locals["data"].preview["type"] == "builtins.dict"
        assert frame.locals["secret_key"].is_redacted
        assert all(f.function != "_run_program" for f in last.frames)
        kinds = [s.kind for s in run.steps]
        assert "line" not in kinds  # calls mode: calls, returns, exceptions only


def _start(tmp_path, how):
    out = tmp_path / f"{how}.snap"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-m", "snapstate_inspect", "record", "-o", str(out),
         "--include", "*/trace_ends.py", PROGRAM, how],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    while "waiting" not in child.stdout.readline():
        pass
    time.sleep(0.2)
    return child, out


@pytest.mark.parametrize("how, signum", [("sigint", signal.SIGINT),
                                         ("sigterm", signal.SIGTERM)])
def test_signal_ends_run_failed_with_everything_on_disk(tmp_path, how, signum):
    child, out = _start(tmp_path, how)
    child.send_signal(signum)
    _, err = child.communicate(timeout=60)
    assert child.returncode == -signum
    if signum == signal.SIGINT:
        assert "KeyboardInterrupt" in err
    timeline, run = _last_run(out)
    with timeline:
        assert run.status == "failed"
        assert len(run.steps) > 50
        assert run.steps[-1].kind == "exception"


@pytest.mark.parametrize("how", ["sigkill", "os_exit"])
def test_killed_recorder_leaves_crashed_run_with_steps(tmp_path, how):
    if how == "sigkill":
        child, out = _start(tmp_path, how)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
        assert child.returncode == -signal.SIGKILL
    else:
        proc, out = _run(tmp_path, how)
        assert proc.returncode == 7
        assert "result 285" in proc.stdout
        # os._exit waits for the writer: every step is in the file when the process is gone
        timeline, run = _last_run(out)
        with timeline:
            assert run.status == "crashed" and len(run.steps) > 20
    deadline = time.monotonic() + 10
    while True:  # the writer process drains what it was handed, then exits
        timeline, run = _last_run(out)
        with timeline:
            count = len(run.steps)
            status = run.status
        if count > 20 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == "crashed"
    assert count > 20
    timeline, run = _last_run(out)
    with timeline:
        for step in run.steps[-5:]:
            assert step.frames or step.kind == "gap"


def test_disable_switch_runs_the_program_unrecorded(tmp_path):
    out = tmp_path / "off.snap"
    proc = run_cli("record", "-o", str(out), PROGRAM, "exit", cwd=tmp_path,
                   env={"SNAPSTATE_DISABLE": "1"})
    assert proc.returncode == 3
    assert "result 285" in proc.stdout
    assert not out.exists()


def test_default_output_under_dot_snapstate(tmp_path):
    proc = run_cli("record", PROGRAM, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    files = list((tmp_path / ".snapstate").glob("trace_ends-*.snap"))
    assert len(files) == 1
    assert str(files[0].relative_to(tmp_path)) in proc.stderr


def test_missing_script_is_one_line_error(tmp_path):
    proc = run_cli("record", "nope.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "snapstate: nope.py: no such file"


def test_output_that_is_no_timeline_or_missing_module_stops_before_running(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text("open('ran', 'w').close()\n")
    text = tmp_path / "notes.snap"
    text.write_text("not a timeline\n")
    (tmp_path / "folder.snap").mkdir()
    for output, problem in ((text, "not a SnapState timeline"), (tmp_path / "folder.snap",
                                                                 "is a directory")):
        proc = run_cli("record", "-o", str(output), "hello.py", cwd=tmp_path)
        assert proc.returncode == 2
        assert len(proc.stderr.splitlines()) == 1 and str(output) in proc.stderr
        assert problem in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "ran").exists() and text.read_text() == "not a timeline\n"
    proc = run_cli("record", "-m", "no_such_module_xyz", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("snapstate: no_such_module_xyz: "
                                   "no module named 'no_such_module_xyz'")
    assert not (tmp_path / ".snapstate").exists()


@pytest.mark.parametrize("trace", ["calls", "lines"])
@pytest.mark.parametrize("mode", ["int", "term"])
def test_every_signal_reaches_the_program_as_it_would_unrecorded(tmp_path, mode, trace):
    """Ctrl-C (``KeyboardInterrupt``) and a ``SIGTERM`` handler's ``SystemExit``, sent while the
    program makes garbage, each arrive in the program, every time, and nothing is printed: the
    handler often runs inside the tracer's gc callback, whose exceptions Python prints and
    drops ("Exception ignored in …": half of them were lost so, ``program_signals``)."""
    proc = run_cli("record", "-o", str(tmp_path / "churn.snap"), "--trace", trace,
                   str(PROGRAMS / "signal_churn.py"), mode, "30", cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "caught 30 lost 0" in proc.stdout, proc.stdout
    assert "Exception ignored" not in proc.stderr, proc.stderr


def test_quiet_leaves_the_programs_stderr_byte_for_byte(tmp_path):
    program = tmp_path / "warn.py"
    program.write_text("import sys\nsys.stderr.write('careful\\n')\nprint('out')\n"
                       "sys.exit('stopped: bad input')\n")
    plain = run_python(str(program), cwd=tmp_path)
    recorded = run_cli("record", "--quiet", "-o", str(tmp_path / "q.snap"), "-m", "warn",
                       cwd=tmp_path)
    assert (recorded.returncode, recorded.stdout, recorded.stderr) == (
        plain.returncode, plain.stdout, plain.stderr) == (1, "out\n",
                                                          "careful\nstopped: bad input\n")
    loud = run_cli("record", "-o", str(tmp_path / "l.snap"), "-m", "warn", cwd=tmp_path)
    assert "snapstate: open it with" in loud.stderr  # what --quiet leaves out
