"""`snapstate record` runs a program exactly as python does (issue 15 point 4): the interpreter's
own environment is never user code, a thread pool does not hang the exit, SIGTERM is never
swallowed by capture, capture prints nothing on the program's streams, and a compiled package
that the trace rule selects gets one note."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import snapstate_capture as snap
from tests.conftest import ROOT, run_cli, run_python


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def test_a_virtualenv_inside_the_project_is_not_user_code(tmp_path):
    """The README's quick start puts the venv in the project folder: its bin/snapstate script
    is neither traced nor on the saved stacks, and the recording replays."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")],
                   check=True, timeout=120)
    python = project / ".venv" / "bin" / "python"
    script = _write(project / ".venv" / "bin" / "snapstate", f"""\
        #!{python}
        import sys
        from snapstate_inspect.cli import main
        sys.exit(main())
        """)
    script.chmod(0o755)
    _write(project / "prog.py", """\
        def double(x):
            return x * 2

        print(double(21))
        """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), sysconfig.get_paths()["purelib"]])}
    recorded = subprocess.run([str(script), "record", "--trace", "calls", "-o", "r.snap",
                               "prog.py"], cwd=project, env=env, capture_output=True,
                              text=True, timeout=120)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == "42\n"
    with snap.open_timeline(project / "r.snap") as timeline:
        steps = list(timeline.runs[-1].steps)
        files = {frame.filename for step in steps for frame in step.frames}
    assert steps and all(".venv" not in f for f in files), files
    assert [s.function for s in steps if s.kind == "call"] == ["<module>", "double"]
    replayed = subprocess.run([str(script), "replay", "r.snap", "--trust"], cwd=project,
                              env=env, capture_output=True, text=True, timeout=120)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence" in replayed.stdout


def test_a_thread_pool_program_exits_as_under_python(tmp_path):
    program = _write(tmp_path / "pool.py", """\
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(2)
        print(pool.submit(pow, 6, 2).result())
        """)
    start = time.monotonic()
    plain = run_python(str(program), cwd=tmp_path)
    plain_seconds = time.monotonic() - start
    start = time.monotonic()
    recorded = run_cli("record", "--trace", "calls", "-o", "p.snap", str(program),
                       cwd=tmp_path, timeout=60)
    seconds = time.monotonic() - start
    assert recorded.returncode == plain.returncode == 0, recorded.stderr
    assert recorded.stdout == plain.stdout == "36\n"
    assert seconds < plain_seconds + 15  # it hung forever: idle workers joined before exit


def test_sigterm_during_capture_ends_the_program(tmp_path):
    """A SIGTERM that arrives while capture is pickling a value (here: inside a class's own
    __reduce__) ends the program by SIGTERM, as without recording; it was swallowed."""
    marker = tmp_path / "in_reduce"
    program = _write(tmp_path / "slow.py", f"""\
        import pathlib, sys, time

        class Slow:
            def __reduce__(self):
                marker = pathlib.Path({str(marker)!r})
                caller = sys._getframe(1).f_code.co_filename
                # slow once, when the payload is written (values/payload.py: where the
                # signal was swallowed), so the signal arrives there
                if caller.endswith("payload.py") and not marker.exists():
                    marker.write_text("x")
                    time.sleep(30)
                return (Slow, ())

        def use(value):
            return 1

        use(Slow())
        print("went on")
        """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "snapstate_inspect", "record",
                             "--trace", "calls", "-o", "t.snap", str(program)], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the program never reached the value's __reduce__"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGTERM
    assert "went on" not in out


def test_snapstates_threads_leave_signals_to_the_program(tmp_path):
    """A signal sent to the process goes to a thread that does not block it; delivered to
    SnapState's own (the flusher, a replay's follower), it did not wake the program's main
    thread from a sleep (``own_threads.py``: the SIGTERM above ended the program 30 s late
    now and then under load). Every thread but the program's main one blocks SIGTERM and
    SIGINT, recorded and replayed. The threads are read by a module outside the program's
    folder (untraced: their ids differ between runs)."""
    library, project = tmp_path / "lib", tmp_path / "project"
    library.mkdir()
    project.mkdir()
    _write(library / "threadmasks.py", """\
        import os, signal, threading

        def unblocked():
            main = threading.main_thread().native_id
            bits = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGINT - 1))
            count = 0
            for tid in os.listdir("/proc/self/task"):
                if int(tid) != main:
                    with open(f"/proc/self/task/{tid}/status") as status:
                        mask = [line for line in status if line.startswith("SigBlk:")][0]
                    count += (int(mask.split()[1], 16) & bits) != bits
            return count
        """)
    program = _write(project / "masks.py", f"""\
        import sys
        sys.path.insert(0, {str(library)!r})
        import os, threadmasks
        print(len(os.listdir("/proc/self/task")) > 1, threadmasks.unblocked())
        """)
    for trace in ("calls", "lines"):
        path = tmp_path / f"{trace}.snap"
        recorded = run_cli("record", "--trace", trace, "-o", str(path), str(program),
                           cwd=project)
        assert recorded.returncode == 0, recorded.stderr
        assert recorded.stdout == "True 0\n"  # SnapState's threads there, none unblocked
        replayed = run_cli("replay", str(path), cwd=project)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert replayed.stdout.startswith("True 0\n"), replayed.stdout


def test_pickling_warnings_are_capture_errors_not_output(tmp_path):
    program = _write(tmp_path / "warns.py", """\
        import warnings

        class Noisy:
            def __reduce__(self):
                warnings.warn("reduced noisily", UserWarning)
                return (Noisy, ())

        def work():
            value = Noisy()
            return 1

        print(work())
        """)
    plain = run_python(str(program), cwd=tmp_path)
    recorded = run_cli("record", "--trace", "lines", "-o", "w.snap", str(program),
                       cwd=tmp_path)
    assert recorded.returncode == plain.returncode == 0
    assert recorded.stdout == plain.stdout == "1\n"
    assert "reduced noisily" not in recorded.stderr
    assert plain.stderr == ""
    with snap.open_timeline(tmp_path / "w.snap") as timeline:
        previews = [frame.locals["value"].preview for step in timeline.runs[-1].steps
                    for frame in step.frames if "value" in frame.locals]
    assert previews and any("UserWarning: reduced noisily" in str(p.get("warnings"))
                            for p in previews)


def test_a_program_warning_shown_once_is_shown_once_while_recorded(tmp_path):
    """Capture's own warnings are collected without telling the warnings machinery its filters
    changed (``warnings.catch_warnings`` did, and every module forgot the warnings it had
    shown: a warning shown once per place came back after every captured step)."""
    program = _write(tmp_path / "once.py", """\
        import sys
        import warnings
        import snapstate_capture as snap

        class Noisy:  # capture meets a warning of its own at every step
            def __reduce__(self):
                warnings.warn("reduced noisily", UserWarning)
                return (Noisy, ())

        def old_api(i):
            warnings.warn("old_api is deprecated", UserWarning)
            return i

        def main():
            noisy, seen = Noisy(), []
            for i in range(4):
                seen.append(old_api(i))
                snap.checkpoint("tick")
            print(seen)

        if sys.argv[1] == "record":
            with snap.record("once.snap"):
                main()
        else:
            main()
        """)
    plain = run_python(str(program), "plain", cwd=tmp_path)
    recorded = run_python(str(program), "record", cwd=tmp_path)
    assert recorded.returncode == plain.returncode == 0, recorded.stderr
    assert recorded.stdout == plain.stdout == "[0, 1, 2, 3]\n"
    assert recorded.stderr == plain.stderr and plain.stderr.count("UserWarning: old_api") == 1
    with snap.open_timeline(tmp_path / "once.snap") as timeline:
        errors = [e for step in timeline.runs[-1].steps for e in step.errors]
    assert any("UserWarning: reduced noisily" in e for e in errors)


def test_a_checkpoint_counts_a_pickling_warning_as_a_capture_error(tmp_path):
    program = _write(tmp_path / "warns_cp.py", """\
        import warnings
        import snapstate_capture as snap

        class Noisy:
            def __reduce__(self):
                warnings.warn("reduced noisily", UserWarning)
                return (Noisy, ())

        with snap.record("c.snap"):
            value = Noisy()
            snap.checkpoint("here")
        """)
    result = run_python(str(program), cwd=tmp_path)
    assert result.returncode == 0 and "reduced noisily" not in result.stderr, result.stderr
    with snap.open_timeline(tmp_path / "c.snap") as timeline:
        step = [s for s in timeline.runs[-1].steps if s.label == "here"][0]
        assert any("UserWarning: reduced noisily" in e for e in step.errors), step.errors


def test_a_compiled_package_gets_one_note(tmp_path):
    program = _write(tmp_path / "zs.py", """\
        import zstandard
        import zstandard.backend_c
        print(len(zstandard.ZstdCompressor().compress(b"x" * 100)) > 0)
        """)
    recorded = run_cli("record", "--trace", "calls", "--include", "*/site-packages/zstandard/*",
                       "--include", "zs.py", "-o", "z.snap", str(program), cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == "True\n"
    notes = [line for line in recorded.stderr.splitlines() if "compiled to C" in line]
    assert len(notes) == 1 and "zstandard" in notes[0], recorded.stderr
    # its __init__.py is Python and traced: the note names the C module, not the package
    assert "zstandard.backend_c is compiled to C" in notes[0], notes
    assert "zstandard's Python modules are" in notes[0], notes


def test_a_catch_all_include_notes_no_compiled_module(tmp_path):
    """``--include '*'`` named no package: it noted some thirty C modules — SnapState's own
    imports among them (sqlite, zstandard) — for a program that used json and re."""
    program = _write(tmp_path / "jr.py", """\
        import json
        import re
        print(json.dumps(re.findall(r"[a-z]+", "every word here")))
        """)
    recorded = run_cli("record", "--trace", "calls", "--include", "*", "-o", "all.snap",
                       str(program), cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    assert "compiled to C" not in recorded.stderr, recorded.stderr


def test_the_program_finds_the_modules_python_would_have_loaded(tmp_path):
    """``snapstate record`` loaded ~40 of rich's modules before the program (its output
    helpers imported rich at import): the program found them in ``sys.modules``, and their
    import-time work (``rich.style`` draws from ``random``) was done outside it — a program
    importing rich then replayed under ``--patch-nondeterminism`` diverged. Without a
    terminal (no progress bar) the program now sees what ``python`` gives it."""
    program = _write(tmp_path / "mods.py", """\
        import sys
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("rich", "textual")))
        """)
    plain = run_python(str(program), cwd=tmp_path)
    for trace in ("lines", "calls"):
        recorded = run_cli("record", "--trace", trace, "-o", str(tmp_path / f"{trace}.snap"),
                           str(program), cwd=tmp_path)
        assert recorded.returncode == 0, recorded.stderr
        assert recorded.stdout == plain.stdout == "[]\n", (trace, recorded.stdout)
