"""Replay of a run recorded in a directory that has since moved (a fresh clone elsewhere):
the program is found next to the timeline file and every recorded path is mapped there."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from tests.conftest import run_cli, run_python

PROGRAM = textwrap.dedent("""
    import snapstate_capture as snap

    @snap.effect
    def ask(question):
        with open("effects.log", "a") as log:  # a real call leaves a line here
            log.write("asked\\n")
        return input(question)

    def main():
        with snap.record("runs/app.snap", name="app"):
            answer = ask("name? ")
            snap.checkpoint("answered", answer=answer.upper())

    main()
""")


def _record(root, entry):
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "app.py").write_text(PROGRAM)
    args = ("pkg/app.py",) if entry == "script" else ("-m", "pkg.app")
    done = run_python(*args, cwd=root, input="ada\n")
    assert done.returncode == 0, done.stderr
    (root / "effects.log").unlink()


@pytest.mark.parametrize("entry", ["script", "module"])
def test_replay_finds_the_moved_program_next_to_the_timeline(tmp_path, entry):
    _record(tmp_path / "first", entry)
    moved = tmp_path / "clone"
    shutil.move(tmp_path / "first", moved)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd in (moved, elsewhere):
        done = run_cli("replay", str(moved / "runs" / "app.snap"), "--trust", cwd=cwd)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "no divergence" in done.stdout
        # said before the replay: the program that runs is not where it was recorded
        assert f"note: replaying the program in {moved} " in done.stdout
        assert f"not in {tmp_path / 'first'}, where it was recorded" in done.stdout
    assert not (moved / "effects.log").exists(), "the effect ran again on replay"


def test_replay_without_the_program_reports_it_missing(tmp_path):
    _record(tmp_path / "first", "module")
    lone = tmp_path / "lone.snap"
    shutil.copy(tmp_path / "first" / "runs" / "app.snap", lone)
    shutil.rmtree(tmp_path / "first")
    done = run_cli("replay", str(lone), "--trust", cwd=tmp_path)
    assert done.returncode == 2
    assert "missing" in done.stdout and "code changed since the recording" in done.stderr


@pytest.mark.parametrize("trace", ["lines", "calls"])
def test_a_traced_run_replays_from_a_copy_of_its_directory(tmp_path, trace):
    """``snapstate record`` traces: its frames' files are in trace chunks, compared at every
    step with the copy's paths mapped back (the copy replayed its own code but compared its
    paths with the recorded ones: divergence at step 0)."""
    first = tmp_path / "proj"
    (first / "mypkg").mkdir(parents=True)
    (first / "mypkg" / "__init__.py").write_text("")
    (first / "mypkg" / "helper.py").write_text("def helper(x):\n    return x * 2\n")
    (first / "main.py").write_text("from mypkg.helper import helper\nprint(helper(3))\n")
    done = run_cli("record", "--trace", trace, "-o", "run.snap", "main.py", cwd=first)
    assert done.returncode == 0, done.stderr
    copy = tmp_path / "copy"
    shutil.copytree(first, copy)
    done = run_cli("replay", "run.snap", cwd=copy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no divergence" in done.stdout
    (copy / "mypkg" / "helper.py").write_text("def helper(x):\n    return x * 3\n")
    drifted = run_cli("replay", "run.snap", cwd=copy)  # the copy's file is the one named
    assert drifted.returncode == 2 and str(copy / "mypkg" / "helper.py") in drifted.stdout


def test_another_file_of_the_same_name_near_the_timeline_does_not_take_the_replay_over(tmp_path):
    """The timeline's directory and its parents are looked in first, so that a timeline
    committed in a checkout replays the checkout's code; a different file under the same
    relative name there took the replay over from the unchanged program where it was recorded
    (drift, exit 2; with --allow-drift the wrong program ran; helper-39: 2 of 2)."""
    root = tmp_path / "project"
    _record(root, "script")
    timeline = root / "runs" / "app.snap"
    (root / "runs" / "pkg").mkdir()
    (root / "runs" / "pkg" / "app.py").write_text("print('another program')\n")
    done = run_cli("replay", str(timeline), "--trust", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no divergence" in done.stdout and "note: replaying the program in" not in done.stdout
    assert not (root / "effects.log").exists(), "the effect ran again on replay"


def test_a_project_recorded_under_a_linked_directory_is_found_when_moved(tmp_path):
    """The entry's working directory is ``getcwd()``'s, with no link in it, and the
    timeline's place was kept as given, through the link: the moved project was taken for
    no copy of the recorded one (helper-41)."""
    real = tmp_path / "real"
    (real / "proj").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    linked = tmp_path / "link" / "proj"
    (linked / "main.py").write_text("total = 0\nfor i in range(3):\n    total += i\n"
                                    "print(total)\n")
    done = run_cli("record", "--trace", "calls", "-o", str(linked / "runs" / "a.snap"),
                   "main.py", cwd=linked)
    assert done.returncode == 0, done.stderr
    moved = tmp_path / "moved"
    shutil.move(real / "proj", moved)
    done = run_cli("replay", str(moved / "runs" / "a.snap"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"note: replaying the program in {moved} " in done.stdout
