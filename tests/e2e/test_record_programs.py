"""`snapstate record` on real programs: standard-library command-line modules with `-m`, a
multi-threaded program and an asyncio program — same output and exit code as plain python, and
the recorded steps show the program's own work."""

from __future__ import annotations

import json
import shutil

import snapstate_capture as snap
from tests.conftest import PROGRAMS, ROOT, run_cli, run_python


def _record(tmp_path, *args, input=None):
    out = tmp_path / "rec.snap"
    proc = run_python("-m", "snapstate_inspect", "record", "-o", str(out), *args,
                      cwd=tmp_path, input=input)
    return proc, out


def _steps(path):
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        return run.status, run.entry, [(s.kind, s.function, s.thread, s.task) for s in run.steps]


def test_json_tool_module_with_include(tmp_path):
    doc = json.dumps({"b": [1, 2, {"c": None}], "a": "x"})
    plain = run_python("-m", "json.tool", "--sort-keys", input=doc, cwd=tmp_path)
    proc, out = _record(tmp_path, "--trace", "calls", "--include", "*/json/*",
                        "-m", "json.tool", "--sort-keys", input=doc)
    assert proc.returncode == plain.returncode == 0
    assert proc.stdout == plain.stdout
    status, entry, steps = _steps(out)
    assert status == "finished"
    assert {k: entry[k] for k in ("kind", "module", "argv", "cwd")} == {
        "kind": "module", "module": "json.tool", "argv": ["--sort-keys"], "cwd": str(tmp_path)}
    functions = {f for _, f, _, _ in steps}
    assert "main" in functions and "JSONDecoder.decode" in functions


def test_module_outside_your_code_gets_a_note_naming_the_include(tmp_path):
    """By default only your own code is traced (as coverage measures only it): recording a
    standard-library module says so before it runs, with the --include that traces it."""
    proc, out = _record(tmp_path, "-m", "calendar", "2024", "2")
    assert proc.returncode == 0
    assert "will not be traced" in proc.stderr and "--include '*/calendar.py'" in proc.stderr
    traced, _ = _record(tmp_path, "--include", "*/calendar.py", "-m", "calendar", "2024", "2")
    assert "will not be traced" not in traced.stderr
    # a dotted module is judged by its own file, not its package's __init__.py (README step 6)
    out = tmp_path / "vm.snap"
    vm = run_python("-m", "snapstate_inspect", "record", "--include", "stack_vm.py", "-o",
                    str(out), "-m", "examples.stack_vm", cwd=ROOT)
    assert vm.returncode == 0 and "will not be traced" not in vm.stderr, vm.stderr
    note = run_python("-m", "snapstate_inspect", "record", "-o", str(tmp_path / "t.snap"),
                      "-m", "json.tool", cwd=tmp_path, input="{}")
    assert "json.tool (" in note.stderr and "json/tool.py) will not be traced" in note.stderr
    assert "--include '*/tool.py'" in note.stderr


def test_calendar_module_lines(tmp_path):
    plain = run_python("-m", "calendar", "2024", "2", cwd=tmp_path)
    proc, out = _record(tmp_path, "--include", "*/calendar.py", "-m", "calendar", "2024", "2")
    assert proc.returncode == plain.returncode == 0
    assert proc.stdout == plain.stdout
    status, _, steps = _steps(out)
    assert status == "finished"
    assert sum(1 for kind, *_ in steps if kind == "line") > 100
    assert any(f == "TextCalendar.formatmonth" for _, f, _, _ in steps)


def test_base64_module_bad_usage_exit_code(tmp_path):
    plain = run_python("-m", "base64", "-z", cwd=tmp_path)
    proc, out = _record(tmp_path, "--include", "*/base64.py", "-m", "base64", "-z")
    assert proc.returncode == plain.returncode == 2
    assert proc.stdout == plain.stdout
    status, _, steps = _steps(out)
    assert status == "failed"
    assert any(f == "main" for _, f, _, _ in steps)


def test_threads_are_traced_with_their_names(tmp_path):
    script = str(PROGRAMS / "trace_threads.py")
    proc, out = _record(tmp_path, "--include", "*/trace_threads.py", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[(0, 0), (1, 10), (2, 20)]"
    _, _, steps = _steps(out)
    workers = {thread for kind, f, thread, _ in steps if f == "worker"}
    assert workers == {"worker-0", "worker-1", "worker-2"}
    assert {("return", "worker", f"worker-{k}") for k in range(3)} <= {
        (kind, f, thread) for kind, f, thread, _ in steps}


def test_asyncio_tasks_recorded(tmp_path):
    script = str(PROGRAMS / "trace_async.py")
    proc, out = _record(tmp_path, "--include", "*/trace_async.py", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "results [20, 30, 10]"
    with snap.open_timeline(out) as timeline:
        steps = list(timeline.runs[-1].steps)
        fetch_tasks = {s.task for s in steps if s.function == "fetch"}
        assert fetch_tasks == {"fetch-ab", "fetch-cde", "fetch-f"}
        suspends = [s for s in steps if s.function == "fetch" and s.kind == "return"
                    and s.label == "yield"]
        assert suspends  # each await that suspends is a step
        # an await that finishes raises StopIteration inside CPython: that is no exception step
        assert [s.label for s in steps if s.kind == "exception"] == []
        pending = [s.tasks for s in steps if s.tasks]
        assert pending
        names = {t[0] for tasks in pending for t in tasks}
        assert {"fetch-ab", "fetch-cde", "fetch-f"} <= names
        coros = {t[1] for tasks in pending for t in tasks}
        assert "fetch" in coros
        where = [t[3] for tasks in pending for t in tasks if t[0] == "fetch-ab" and t[3]]
        assert any(w.endswith(".py:" + w.rsplit(":", 1)[1]) for w in where)
        values = [s.frames[-1].locals["value"].repr for s in steps
                  if s.function == "fetch" and s.frames and "value" in s.frames[-1].locals]
        assert {"20", "30", "10"} <= set(values)


def test_ls_shows_a_live_recording_growing(tmp_path):
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    script = tmp_path / "slow.py"
    script.write_text("import time\nfor i in range(400):\n    x = i * 2\n    time.sleep(0.005)\n")
    out = tmp_path / "live.snap"
    child = subprocess.Popen([sys.executable, "-m", "snapstate_inspect", "record", "-o",
                              str(out), str(script)], cwd=tmp_path,
                             env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        counts = []
        deadline = time.monotonic() + 20
        while child.poll() is None and time.monotonic() < deadline:
            if out.exists():
                listing = run_cli("ls", str(out), "--json")
                if listing.returncode == 0:
                    runs = json.loads(listing.stdout)["runs"]
                    if runs:
                        counts.append(runs[-1]["steps"])
            time.sleep(0.3)
    finally:
        child.wait(timeout=30)
    growing = [c for c in counts if c]
    assert len(set(growing)) >= 2 and growing == sorted(growing)


def test_exceptions_inside_coroutines_are_still_steps(tmp_path):
    script = tmp_path / "coro_errors.py"
    script.write_text(
        "import asyncio\n"
        "async def work():\n"
        "    await asyncio.sleep(0)\n"
        "    try:\n"
        "        next(iter([]))\n"  # a StopIteration the program raises itself
        "    except StopIteration:\n"
        "        pass\n"
        "    try:\n"
        "        raise KeyError('k')\n"
        "    except KeyError:\n"
        "        return 1\n"
        "print(asyncio.run(work()))\n")
    proc, out = _record(tmp_path, "--trace", "lines", "--include", "*/coro_errors.py", str(script))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1\n"
    with snap.open_timeline(out) as timeline:
        steps = list(timeline.runs[-1].steps)
        raised = [(s.label, s.lineno) for s in steps if s.kind == "exception"]
        assert raised == [("StopIteration", 5), ("KeyError", 9)]


def test_script_sees_what_python_gives_it(tmp_path):
    """``__file__`` absolute (Python 3.9+), ``sys.argv`` as typed, ``__main__`` with no spec, the
    source readable by ``inspect``, and the same traceback — recorded or not."""
    script = tmp_path / "facts.py"
    script.write_text(
        "import inspect, sys\n"
        "def probe():\n"
        "    return 1\n"
        "print(__file__, sys.argv, __name__, __spec__, type(__loader__).__name__)\n"
        "print(inspect.getsource(probe).splitlines()[0])\n"
        "raise ValueError('boom')\n")
    plain = run_python("facts.py", "a", "b", cwd=tmp_path)
    proc, _ = _record(tmp_path, "facts.py", "a", "b")
    assert proc.returncode == plain.returncode == 1
    assert proc.stdout == plain.stdout
    assert str(script) in proc.stdout and "['facts.py', 'a', 'b']" in proc.stdout
    traceback = proc.stderr[proc.stderr.index("Traceback"):]
    assert traceback == plain.stderr[plain.stderr.index("Traceback"):]


def test_a_script_started_by_a_relative_name_replays_with_the_argv_it_had(tmp_path):
    """Replay gave ``sys.argv[0]`` the script's absolute path: a traced ``main(argv)`` kept
    another value than recorded and diverged there (helper-39: 3 of 3). The entry keeps the
    name it was started by (``argv0``), from ``snapstate record`` and from a ``record``
    block."""
    (tmp_path / "cli.py").write_text(
        "import sys\n"
        "def main(argv):\n"
        "    count = len(argv)\n"
        "    return count\n"
        "main(sys.argv)\n"
        "if sys.argv[1:] == ['block']:\n"
        "    import snapstate_capture as snap\n"
        "    with snap.record('block.snap'):\n"
        "        main(sys.argv)\n"
        "        snap.checkpoint('argv', argv=sys.argv)\n")
    proc, path = _record(tmp_path, "cli.py", "x", "y")
    assert proc.returncode == 0, proc.stderr
    with snap.open_timeline(path) as timeline:
        assert timeline.runs[-1].entry["argv0"] == "cli.py"
    done = run_cli("replay", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    moved = tmp_path.parent / f"{tmp_path.name}-moved"  # a copy elsewhere: the same name
    shutil.copytree(tmp_path, moved)
    done = run_cli("replay", str(moved / path.name), cwd=moved.parent)
    assert done.returncode == 0 and "replaying the program in" in done.stdout, done.stdout
    assert run_python("cli.py", "block", cwd=tmp_path).returncode == 0
    done = run_cli("replay", str(tmp_path / "block.snap"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_traceback_through_generated_code_is_the_one_python_prints(tmp_path):
    """Code compiled under a name that is not ``<...>`` (networkx's ``"<class 'argmap'>
    compilation 20"``) has no source of its own: python's own printer shows no line for it,
    where ``traceback.print_exception`` would show a line of the module that compiled it."""
    (tmp_path / "gen.py").write_text(
        "import os\n"
        "import sys\n"
        "namespace = globals()\n"
        "exec(compile('def fail():\\n    return 1 / 0\\n', '<gen> compilation 1', 'exec'),\n"
        "     namespace)\n")
    (tmp_path / "main.py").write_text("import gen\ngen.fail()\n")
    plain = run_python("main.py", cwd=tmp_path)
    proc, _ = _record(tmp_path, "main.py")
    assert proc.returncode == plain.returncode == 1
    traceback = proc.stderr[proc.stderr.index("Traceback"):]
    assert traceback == plain.stderr[plain.stderr.index("Traceback"):]
    assert "import sys" not in traceback and "compilation 1" in traceback


def test_the_programs_own_excepthook_reports_its_error(tmp_path):
    (tmp_path / "hooked.py").write_text(
        "import sys\n"
        "sys.excepthook = lambda kind, exc, tb: print('hooked:', kind.__name__, exc)\n"
        "raise KeyError('k')\n")
    plain = run_python("hooked.py", cwd=tmp_path)
    proc, _ = _record(tmp_path, "hooked.py")
    assert proc.returncode == plain.returncode == 1
    assert proc.stdout == plain.stdout == "hooked: KeyError 'k'\n"


def _stderr_as_python_prints_it(tmp_path, script, text):
    (tmp_path / script).write_text(text)
    plain = run_python(script, cwd=tmp_path)
    proc, _ = _record(tmp_path, script)
    said = "".join(line for line in proc.stderr.splitlines(keepends=True)
                   if not line.startswith("snapstate: "))
    return plain, proc, said


def test_a_hook_that_raises_and_sys_last_value_are_as_python_has_them(tmp_path):
    plain, proc, said = _stderr_as_python_prints_it(tmp_path, "hooked.py", (
        "import sys\n"
        "def hook(kind, exc, tb):\n"
        "    print('last:', repr(sys.last_value))\n"
        "    raise RuntimeError('hook broke')\n"
        "sys.excepthook = hook\n"
        "raise ValueError('lv')\n"))
    assert proc.returncode == plain.returncode == 1
    assert proc.stdout == plain.stdout == "last: ValueError('lv')\n"
    assert said == plain.stderr
    assert "Error in sys.excepthook:" in said and "Original exception was:" in said


def test_a_folder_named_like_snapstate_keeps_its_frames(tmp_path):
    folder = tmp_path / "my_snapstate_capture_demo"
    folder.mkdir()
    plain, proc, said = _stderr_as_python_prints_it(folder, "s.py", (
        "def inner():\n    raise ValueError('v')\ninner()\n"))
    assert said == plain.stderr and "in inner" in said


def test_a_recursion_error_ends_in_the_programs_frames(tmp_path):
    plain, proc, said = _stderr_as_python_prints_it(tmp_path, "deep.py", (
        "def f(n):\n    return f(n + 1)\nf(0)\n"))
    assert proc.returncode == plain.returncode == 1
    frames = [line for line in said.splitlines() if line.startswith('  File "')]
    assert frames and all("deep.py" in line for line in frames), frames[-3:]
    assert "RecursionError: maximum recursion depth exceeded" in said


def test_snapstates_lines_go_to_the_process_stderr_whatever_the_program_did(tmp_path):
    (tmp_path / "swap.py").write_text("import sys\nsys.stderr = sys.stdout\nprint('out')\n")
    proc, _ = _record(tmp_path, "swap.py")
    assert proc.returncode == 0
    assert proc.stdout == "out\n"  # as plain python prints it
    assert "snapstate: " in proc.stderr and "steps, finished" in proc.stderr


def test_snapstates_own_frames_stay_hidden_when_it_is_imported_through_a_link(tmp_path):
    """Own frames were told by resolved file name against the folder as imported: through a
    linked folder (PYTHONPATH=/link/to/checkout), ``snapstate record``'s ``_run_program``
    and ``run_script`` showed on the program's stacks, and a traced replay of an async
    effect diverged there (helper-41's runs)."""
    import os
    import subprocess
    import sys

    link = tmp_path / "link"
    link.symlink_to(ROOT, target_is_directory=True)
    (tmp_path / "prog.py").write_text(
        "import snapstate_capture as snap\n"
        "def main():\n"
        "    snap.checkpoint('here', n=1)\n"
        "main()\n")
    env = {**os.environ, "PYTHONPATH": str(link)}
    done = subprocess.run([sys.executable, "-m", "snapstate_inspect", "record", "--trace",
                           "calls", "-o", "run.snap", "prog.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(tmp_path / "run.snap") as timeline:
        step = next(s for s in timeline.runs[-1].steps if s.kind == "checkpoint")
        assert [f.function for f in step.frames] == ["<module>", "main"]
