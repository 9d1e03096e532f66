"""Tracer manners in real processes: recording under `coverage run` (both get every event), and
threads that were already running when recording began (recorded once, `not traced`)."""

from __future__ import annotations

import json

import snapstate_capture as snap
from tests.conftest import PROGRAMS, run_python

PROGRAM = str(PROGRAMS / "trace_ends.py")


def test_record_under_coverage_run(tmp_path):
    out = tmp_path / "cov.snap"
    proc = run_python("-m", "coverage", "run", "--data-file", str(tmp_path / ".coverage"),
                      "-m", "snapstate_inspect", "record", "-o", str(out),
                      "--include", "*/trace_ends.py", PROGRAM, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "result 285" in proc.stdout
    report = run_python("-m", "coverage", "json", "--data-file", str(tmp_path / ".coverage"),
                        "-o", str(tmp_path / "cov.json"), "--include", "*/trace_ends.py",
                        cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    files = json.loads((tmp_path / "cov.json").read_text())["files"]
    (measured,) = files.values()
    executed = set(measured["executed_lines"])
    work_body = 12  # `total += i * i` in work()
    assert work_body in executed
    with snap.open_timeline(out) as timeline:
        steps = list(timeline.runs[-1].steps)
        assert any(s.function == "work" and s.lineno == work_body + 1 for s in steps)
        assert {"call", "line", "return"} <= {s.kind for s in steps}


def test_threads_running_before_recording_are_recorded_not_traced(tmp_path):
    script = tmp_path / "early.py"
    script.write_text(
        "import threading, time\n"
        "import snapstate_capture as snap\n"
        "stop = threading.Event()\n"
        "def idle():\n"
        "    waiting = 'yes'\n"
        "    stop.wait()\n"
        "t = threading.Thread(target=idle, name='early-bird')\n"
        "t.start()\n"
        "time.sleep(0.1)\n"
        f"with snap.record({str(tmp_path / 'e.snap')!r}, trace='calls'):\n"
        "    stop.set()\n"
        "    t.join()\n")
    proc = run_python(str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with snap.open_timeline(tmp_path / "e.snap") as timeline:
        steps = list(timeline.runs[-1].steps)
        early = [s for s in steps if s.thread == "early-bird"]
        assert [s.label for s in early] == ["thread early-bird: not traced"]
        assert early[0].frames[-1].function == "idle"
        assert early[0].frames[-1].locals["waiting"].repr == "'yes'"
