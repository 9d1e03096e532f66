"""Traced runs (``snapstate record --trace lines``) replay too: the program runs again inside
the same traced block, effects served (the effect's own traced body is not run), and the two
runs are compared step by step."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import snapstate_capture as snap
from tests.conftest import PROGRAMS, run_cli
from tests.e2e.replay_helpers import replay_json, side_lines


def _record(tmp_path):
    program = shutil.copy(PROGRAMS / "traced_agent.py", tmp_path / "agent.py")
    path, side = tmp_path / "traced.snap", tmp_path / "side.txt"
    done = run_cli("record", "-o", str(path), "--trace", "lines", str(program), str(side),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return path, side, tmp_path / "agent.py"


def test_traced_run_replays_without_running_effects(tmp_path):
    path, side, _ = _record(tmp_path)
    before = side_lines(side)
    assert len(before) == 5
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        assert run.entry["record"]["trace"] == "lines"
        count = len(run.steps)
        kinds = {s.kind for s in run.steps}
    assert {"line", "call", "return", "effect"} <= kinds
    result, data = replay_json(path)
    assert result.returncode == 0, result.stderr
    assert data["status"] == "ok" and data["replayed"] == count
    result, data = replay_json(path, "--to", "30")
    assert result.returncode == 0, result.stderr
    assert data["message"] == "replayed 31 steps (0-30), no divergence"
    assert side_lines(side) == before


def test_traced_run_diverges_at_the_first_affected_line(tmp_path):
    path, side, program = _record(tmp_path)
    text = program.read_text()
    program.write_text(text.replace("    total += i * 2\n",
                                    "    total += i * 2 if i != 3 else 0\n"))
    result, data = replay_json(path, "--allow-drift")
    assert result.returncode == 1, result.stderr
    report = data["divergence"]
    assert [v["name"] for v in report["variables"]] == ["total"]
    changed_line = text.splitlines().index("    total += i * 2") + 1
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        at, before = steps[report["step"]], steps[report["step"] - 1]
        assert at.frames[-1].locals["i"].repr == "3"
        assert (before.lineno, before.frames[-1].locals["i"].repr) == (changed_line, "3")


def _call_step(path, function, **locals_repr):
    """Index of the recorded call step of ``function`` whose locals have these reprs."""
    with snap.open_timeline(path) as timeline:
        for step in timeline.runs[-1].steps:
            if step.kind == "call" and step.function == function:
                values = step.frames[-1].locals
                if all(values[k].repr == v for k, v in locals_repr.items()):
                    return step.index
    raise AssertionError(f"no call of {function} with {locals_repr}")


def test_pdb_stops_at_a_traced_call_step_with_the_recorded_locals(tmp_path):
    path, side, _ = _record(tmp_path)
    before = side_lines(side)
    index = _call_step(path, "step", i="3")
    with snap.open_timeline(path) as timeline:
        total = timeline.runs[-1].steps[index].frames[-1].locals["total"].repr
        final = timeline.runs[-1].steps[-1].frames[-1].locals["total"].repr
    result = run_cli("replay", str(path), "--to", str(index), "--pdb",
                     input="p i, total\nc\n")
    assert result.returncode == 0, result.stderr
    assert f"replay reached step {index} (call in step line " in result.stdout
    assert f"(Pdb) (3, {total})" in result.stdout  # the live frame holds the recorded locals
    # `c`: the program runs on to its end (untraced), its effects still served
    assert f"total {final}" in result.stdout
    # the verdict says the part after the stop was not checked
    assert (f"replayed {index + 1} steps (0-{index}), no divergence; the program then ran on "
            "to its end, unchecked") in result.stdout
    assert side_lines(side) == before


def test_pdb_shows_the_programs_stack_and_ends_with_the_program(tmp_path):
    """``where`` lists the program's frames only (not the replay child's, below its
    ``<module>``), ``up`` stops at the program's outermost frame, and ``n`` past the program's
    last line ends the session, not in the import machinery the child runs next."""
    path, _, program = _record(tmp_path)
    index = _call_step(path, "step", i="4")
    result = run_cli("replay", str(path), "--to", str(index), "--pdb",
                     input="where\nup\nup\nn\nn\nn\nn\nn\n")
    assert result.returncode == 0, result.stderr
    shown = result.stdout
    where = shown[shown.index("(Pdb) "):shown.index("(Pdb) ", shown.index("(Pdb) ") + 1)]
    assert re.findall(r"(\S+\.py)\(\d+\)(\S+)\(\)", where) == [
        (str(program), "<module>"), (str(program), "step")], where
    assert "*** Oldest frame" in shown
    assert "snapstate_capture" not in shown and "importlib" not in shown, shown
    assert f"replayed {index + 1} steps (0-{index}), no divergence" in shown


def test_a_traced_stop_at_a_step_that_is_no_call_names_the_call_of_its_frame(tmp_path):
    path, _, _ = _record(tmp_path)
    call = _call_step(path, "step", i="2")
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        line = next(s.index for s in steps.range(call + 1, len(steps)) if s.kind == "line")
    result = run_cli("replay", str(path), "--to", str(line), "--console")
    assert result.returncode == 2
    (message,) = result.stderr.strip().splitlines()
    assert (f"step {line} is a line step of a traced run; a traced replay stops and forks at "
            f"call, checkpoint and effect steps only (the call of step: --to {call})"
            ) in message


def test_pdb_stops_at_a_traced_effect_step_with_its_values(tmp_path):
    """An effect step (stored at once, like a checkpoint) is a stop point of a traced replay:
    the frame that called the effect, and the served result as ``step_values``."""
    path, side, _ = _record(tmp_path)
    before = side_lines(side)
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        index = [s.index for s in steps if s.kind == "effect"][2]
        result_repr = steps[index].extra["result"].repr
    result = run_cli("replay", str(path), "--to", str(index), "--pdb",
                     input="p i, total\np step_values['result']\nc\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(f"replay reached step {index} (effect 'fetch' in step line") == 1
    assert "(Pdb) (2, " in result.stdout
    assert f"(Pdb) {result_repr}" in result.stdout  # served, not fetched again
    assert f"replayed {index + 1} steps (0-{index}), no divergence" in result.stdout
    assert side_lines(side) == before


def test_a_traced_stop_after_a_divergence_reports_the_divergence(tmp_path):
    path, _, program = _record(tmp_path)
    index = _call_step(path, "step", i="4")
    program.write_text(program.read_text().replace("    total += i * 2\n",
                                                   "    total += i * 2 if i != 1 else 0\n"))
    result = run_cli("replay", str(path), "--to", str(index), "--pdb", "--allow-drift",
                     input="c\n")
    assert result.returncode == 1, result.stderr
    assert "divergence at step" in result.stdout + result.stderr
    assert "(Pdb)" not in result.stdout  # never stopped: the run had diverged before


def test_pdb_stops_inside_a_package_we_did_not_write(tmp_path):
    """mistune, traced with --trace calls: stop at the call of its inline parser for the
    text 'second', and read the live frame's arguments."""
    program = PROGRAMS.parent / "corpus" / "programs" / "render_markdown.py"
    path = tmp_path / "md.snap"
    done = run_cli("record", "--trace", "calls", "--include", "*/site-packages/mistune/*",
                   "-o", str(path), str(program), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        steps = timeline.runs[-1].steps
        target = next(s for s in steps if s.kind == "call" and "site-packages/mistune/" in
                      (s.filename or "") and "text" in s.frames[-1].locals and
                      s.frames[-1].locals["text"].repr == "'second'")
        index, function = target.index, target.function
    result = run_cli("replay", str(path), "--to", str(index), "--pdb", cwd=tmp_path,
                     input="p text\nc\n", timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"replay reached step {index} (call in {function} line " in result.stdout
    assert "(Pdb) 'second'" in result.stdout
    assert f"replayed {index + 1} steps (0-{index}), no divergence" in result.stdout


JSON_PROGRAM = '''\
import json
import snapstate_capture as snap

data = json.loads('{"a": [1, 2, 3]}')
snap.checkpoint("parsed", data=data)
print(json.dumps(data, sort_keys=True))
'''


def test_a_library_snapstate_itself_uses_is_traced_only_where_the_program_calls_it(tmp_path):
    """``--include '*/json/*'``: replay reads its recording with ``json`` under the tracer, and
    a checkpoint's capture may use it too; only the program's two calls are steps, so the
    replay is the recording's (it diverged at step 0 on replay's own ``json.loads``)."""
    program = tmp_path / "uses_json.py"
    program.write_text(JSON_PROGRAM)
    path = tmp_path / "json.snap"
    done = run_cli("record", "-o", str(path), "--trace", "calls", "--include", "*/json/*",
                   str(program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        steps = list(timeline.runs[-1].steps)
    outer = [s.function for s in steps if s.kind == "call" and len(s.frames) == 1]
    assert outer == ["loads", "dumps"], [(s.kind, s.function) for s in steps]
    assert [s.label for s in steps if s.kind == "checkpoint"] == ["parsed"]
    result, data = replay_json(path)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
    assert data["message"] == f"replayed {len(steps)} steps, no divergence", data


OLD_RECORDER = '''
import sys
import snapstate_capture.tracing.call_frame as call_frame
call_frame._is_unwinding = lambda frame: False  # as recorders were before the "raised" label
from snapstate_inspect.cli import main
sys.exit(main(["record", "--trace", "calls", "-o", sys.argv[1], sys.argv[2]]))
'''


def test_a_recording_made_before_raised_steps_replays_without_divergence(tmp_path):
    """Older recorders stored an exception leaving a frame as a return of None; the replay
    labels it ``raised`` and reads the recorded step as one."""
    from tests.conftest import run_python

    script = tmp_path / "unwind.py"
    shutil.copy(PROGRAMS / "unwinding.py", script)
    path = tmp_path / "old.snap"
    done = run_python("-c", OLD_RECORDER, str(path), str(script), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        labels = [(s.kind, s.function, s.label) for s in timeline.runs[-1].steps]
    assert ("return", "divide", None) in labels  # the old form
    replayed = run_cli("replay", str(path), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "replayed 8 steps, no divergence" in replayed.stdout


STEPPED = '''import snapstate_capture as snap


@snap.step
def double(x):
    return 2 * x


@snap.effect
def fetch(n):
    return n + 1


def main():
    a = double(3)
    b = fetch(a)
    snap.checkpoint("done", b=b)
    print(a, b)


if __name__ == "__main__":
    main()
'''


def test_a_script_with_module_level_step_functions_replays(tmp_path):
    """A ``@snap.step`` function at module level is a global of the script's traced module
    frame: its wrapper has a closure, but pickle writes it by reference, so what the closure
    reaches (its own module's globals, which differ in the replay child) is no part of it. It
    diverged at the first step after its ``def`` (a newcomer's trial; predates this round)."""
    program = tmp_path / "stepped.py"
    program.write_text(STEPPED)
    path = tmp_path / "stepped.snap"
    for trace in ("lines", "calls"):
        done = run_cli("record", "-o", str(path), "--trace", trace, str(program), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "6 7\n"
        result, data = replay_json(path)
        assert result.returncode == 0, result.stderr
        assert data["status"] == "ok", data
        path.unlink()


EVERYTHING = '''
import json
import re


def words(text):
    return re.findall(r"[a-z]+", text)


def main():
    data = {"words": words("tracing the standard library too")}
    return json.loads(json.dumps(data))


print(main())
'''


def test_a_program_traced_whole_with_the_standard_library_replays(tmp_path):
    """``snapstate record --include '*'`` traces the standard library with the program. The
    ``snapstate`` script's own frame stood below every step, and the machinery's calls into
    ``threading`` (starting its flusher through the lineage hook, joining the program's
    threads at the end) and an import at the block's end were steps no replay makes: it
    diverged at step 0."""
    program = tmp_path / "everything.py"
    program.write_text(EVERYTHING)
    script = Path(sys.executable).parent / "snapstate"  # the console script, as users run it
    path = tmp_path / "everything.snap"
    done = subprocess.run([str(script), "record", "--trace", "calls", "--include", "*",
                           "-o", str(path), str(program)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        steps = list(timeline.runs[-1].steps)
    functions = {step.function for step in steps}
    assert {"words", "findall", "dumps", "loads"} <= functions, functions
    assert all(step.frames[0].filename == str(program) for step in steps), \
        {step.frames[0].filename for step in steps}
    assert not functions & {"enumerate", "current_thread", "Thread.start", "find_spec"}
    replayed = run_cli("replay", str(path), cwd=tmp_path, timeout=120)
    assert f"replayed {len(steps)} steps, no divergence" in replayed.stdout, (
        replayed.stdout + replayed.stderr)


def test_pdb_steps_from_a_packages_init_into_its_main_module(tmp_path):
    """``record -m pkg.prog``: step 0 is ``pkg/__init__``'s body. Stepping past it went on in
    the import machinery's hooks, or ended the session; as with ``python -m pdb -m``, it
    reaches ``pkg/prog.py``'s lines."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "prog.py").write_text(
        "def inner(x):\n    return x * 2 + 1\n\n\nresult = sum(inner(i) for i in range(3))\n"
        "print('result', result)\n")
    path = tmp_path / "pkg.snap"
    done = run_cli("record", "--trace", "calls", "-o", str(path), "-m", "pkg.prog",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = run_cli("replay", str(path), "--to", "0", "--pdb", cwd=tmp_path,
                     input="s\ns\nn\nn\nn\nn\nn\n")
    assert result.returncode == 0, result.stderr
    shown = result.stdout
    assert f"{package / '__init__.py'}(0)<module>()" in shown
    assert f"{package / 'prog.py'}(5)<module>()" in shown and "result 9" in shown, shown
    assert not any(word in shown for word in ("importlib", "zipimport", "_distutils_hack",
                                              "runpy", "snapstate_capture")), shown


def test_pdb_next_at_a_traced_call_steps_through_the_body_and_back_to_the_caller(tmp_path):
    """At a call step of a call-traced run, ``n`` ran the whole body (call tracing had turned
    the frame's line events off) and the next ``n`` stopped in the following call instead of
    the caller's next line."""
    program = tmp_path / "nested.py"
    program.write_text("def inner(x):\n    y = x * 2\n    return y + 1\n\n\n"
                       "def outer(n):\n    total = 0\n    for i in range(n):\n"
                       "        total += inner(i)\n    return total\n\n\n"
                       "print('result', outer(3))\n")
    path = tmp_path / "nested.snap"
    done = run_cli("record", "--trace", "calls", "-o", str(path), str(program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    index = _call_step(path, "inner", x="1")
    result = run_cli("replay", str(path), "--to", str(index), "--pdb", cwd=tmp_path,
                     input="n\nn\nn\nn\nc\n")
    assert result.returncode == 0, result.stderr
    stops = re.findall(r"nested\.py\((\d+)\)(\w+)\(\)", result.stdout)
    assert stops == [("1", "inner"), ("2", "inner"), ("3", "inner"), ("3", "inner"),
                     ("8", "outer")], result.stdout
    assert "result 9" in result.stdout



def test_pdb_quit_ends_the_replay_there(tmp_path):
    """``q`` at a replay stop let the program run on to its end (its output, its effects
    served); it ends the replay at the stop, as ``q`` ends a program run under pdb."""
    path, side, _ = _record(tmp_path)
    index = _call_step(path, "step", i="3")
    result = run_cli("replay", str(path), "--to", str(index), "--pdb", input="q\n")
    assert result.returncode == 0, result.stderr
    assert f"replayed {index + 1} steps (0-{index}), no divergence; pdb quit there" \
        in result.stdout
    assert "total " not in result.stdout  # the program's last line never ran


def test_pdb_in_a_traced_library_keeps_the_scripts_calling_frame(tmp_path):
    """Only the included library's frames are on a traced step's recorded stack; pdb's
    ``where`` at such a stop still starts at the script that called it (the recorded stack's
    outermost frame is the bottom of pdb's stack only for a test's timeline)."""
    (tmp_path / "shapes.py").write_text("def area(w, h):\n    return w * h\n")
    (tmp_path / "caller.py").write_text("import shapes\n\nprint(shapes.area(3, 4))\n")
    path = tmp_path / "caller.snap"
    done = run_cli("record", "--trace", "calls", "--include", "*/shapes.py", "-o", str(path),
                   "caller.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with snap.open_timeline(path) as timeline:
        call = next(s.index for s in timeline.runs[-1].steps
                    if s.kind == "call" and s.function == "area")
    stopped = run_cli("replay", str(path), "--to", str(call), "--pdb", cwd=tmp_path,
                      input="where\nc\n", timeout=120)
    shown = stopped.stdout.split("(Pdb)", 1)[1]
    assert "caller.py(3)<module>()" in shown and "area()" in shown, stopped.stdout
