"""Progress bars: drawn on stderr only when it is a terminal (a pty here), never when piped or
with --quiet; the capture side reports progress through plain callbacks."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import snapstate_capture as snap
from snapstate_capture.replay.launch import replay
from snapstate_capture.store.maintenance import collect_garbage
from snapstate_capture.trust.transfer import copy_run
from snapstate_capture.trust.verify import verify_timeline
from tests.conftest import cli_on_a_terminal, run_cli, run_python

PROGRAM = textwrap.dedent('''
    import sys
    import snapstate_capture as snap

    @snap.effect(name="tick")
    def tick(i):
        return i * 3

    with snap.record(sys.argv[1], name="ticks"):
        for i in range(60):
            snap.checkpoint("turn", value=tick(i))
''')


def _recorded(tmp_path: Path) -> Path:
    script, path = tmp_path / "ticks.py", tmp_path / "ticks.snap"
    script.write_text(PROGRAM)
    assert run_python(str(script), str(path), cwd=tmp_path).returncode == 0
    return path


def _stderr_on_a_terminal(*args: str, cwd: Path) -> tuple[int, str, str]:
    """``snapstate ARGS`` with stderr on a pseudo-terminal: (exit code, stdout, stderr)."""
    code, out, err = cli_on_a_terminal(*args, cwd=cwd)
    return code, out or "", err


def test_bars_on_a_terminal_and_never_when_piped_or_quiet(tmp_path):
    path = _recorded(tmp_path)
    code, out, err = _stderr_on_a_terminal("verify", str(path), cwd=tmp_path)
    assert code == 0 and "verifying" in err and "ok: nothing altered" in out
    code, out, err = _stderr_on_a_terminal("verify", "--quiet", str(path), cwd=tmp_path)
    assert code == 0 and "verifying" not in err
    code, out, err = _stderr_on_a_terminal("replay", str(path), cwd=tmp_path)
    assert code == 0 and "no divergence" in out
    assert "━" not in err and "\x1b[" not in err  # a short replay: no progress line yet
    code, out, err = _stderr_on_a_terminal("push", "--quiet", str(path), str(tmp_path / "b.snap"),
                                           cwd=tmp_path)
    assert code == 0 and "pushing" not in err and "pushed run" in out
    piped = run_cli("replay", str(path), cwd=tmp_path)
    assert piped.returncode == 0 and "replaying" not in piped.stderr
    assert "━" not in piped.stderr and "\x1b[" not in piped.stderr


def test_a_long_replay_says_nothing_of_its_progress_when_piped_or_quiet(tmp_path):
    """A replay long enough for the replay child's own step counter (80,000 traced steps:
    more than a second; it tells at most once a second, from 500 steps on): piped, or with
    ``--quiet``, no progress line is written (the child wrote ``replaying step i of n`` lines
    whenever no bar was drawn)."""
    script, path = tmp_path / "loop.py", tmp_path / "loop.snap"
    script.write_text("total = 0\nfor i in range(40000):\n    total += i\nprint(total)\n")
    recorded = run_cli("record", "-o", str(path), "--trace", "lines", str(script), cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    for extra in ((), ("--quiet",)):
        done = run_cli("replay", str(path), *extra, cwd=tmp_path, timeout=180)
        assert done.returncode == 0, done.stderr
        assert "replaying step" not in done.stderr, (extra, done.stderr)


def test_capture_side_progress_callbacks_count_up_to_the_total(tmp_path):
    path = _recorded(tmp_path)
    seen: list[tuple[int, int]] = []
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        verify_timeline(timeline, None, progress=lambda done, total: seen.append((done, total)))
        steps = [(d, t) for d, t in seen if t]  # after the blob scan (total not known)
        assert steps[-1] == (len(run.steps), len(run.steps))
        assert [d for d, _ in steps] == sorted(d for d, _ in steps)
        assert any(t == 0 and d > 0 for d, t in seen)  # blobs counted as they were checked
        replayed: list[tuple[int, int]] = []
        result = replay(run, trust=True, on_progress=lambda d, t: replayed.append((d, t)))
        count = len(run.steps)
    assert result["status"] == "ok"
    assert replayed[-1] == (count, count)
    copied: list[tuple[int, int]] = []
    report = copy_run(path, path.with_name("copy.snap"),
                      progress=lambda d, t: copied.append((d, t)))
    assert copied[-1] == (count + report.blobs, count + report.blobs) and report.blobs > 0
    marked: list[tuple[int, int]] = []
    collect_garbage(path, progress=lambda d, t: marked.append((d, t)))
    assert marked and marked[-1][0] == marked[-1][1]


TALKING = textwrap.dedent('''
    import sys
    import time

    def work(i):
        return sum(range(i))

    for i in range(9):
        work(i)
        print(f"line {i}: done", flush=True)
        time.sleep(0.5)
    print(sorted(m for m in sys.modules if m.split(".")[0] == "rich"), flush=True)
''')


def test_record_and_replay_tell_progress_in_lines_between_the_programs_own(tmp_path):
    """The program's output and the progress share one terminal when `record` traces a
    program or `replay` runs one: a bar redrawn in place joined every line the program printed
    (``recording ━━━━ 1400833/? steps written  line 7: done``) and, in the recorded
    program's process, imported rich before the program. Progress is now a whole line now and
    then, between the program's own lines, and the program finds no rich loaded."""
    script, path = tmp_path / "talking.py", tmp_path / "talking.snap"
    script.write_text(TALKING)
    code, _, shown = cli_on_a_terminal("record", "--trace", "lines", "-o", str(path),
                                       str(script), cwd=tmp_path, stdout_too=True)
    assert code == 0, shown
    shown = shown.replace("\r\n", "\n")
    for i in range(9):
        assert re.search(rf"^line {i}: done$", shown, re.M), shown
    assert re.search(r"^snapstate: recording, [\d,]+ steps written \(\d+ s\)$", shown, re.M), shown
    assert re.search(r"^\[\]$", shown, re.M), shown  # no rich module in the program
    assert "━" not in shown and "\x1b[" not in shown
    code, _, shown = cli_on_a_terminal("replay", str(path), cwd=tmp_path, stdout_too=True)
    shown = shown.replace("\r\n", "\n")
    assert code == 0 and "no divergence" in shown, shown
    for i in range(9):
        assert re.search(rf"^line {i}: done$", shown, re.M), shown
    assert re.search(r"^snapstate: replaying, [\d,]+ of [\d,]+ steps \(\d+ s\)$", shown, re.M)
    assert "━" not in shown
