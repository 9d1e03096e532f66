"""Durable waits with real processes (issue 17): a program waits and exits; later resumes in
other processes answer it; the run continues at the line after the wait, effects before it
are never executed again, and the final output is an uninterrupted run's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import snapstate_capture as snap
from tests.conftest import PROGRAMS, ROOT, run_cli, run_python
from tests.e2e.replay_helpers import runs_json, side_lines

PROGRAM = PROGRAMS / "durable_agent.py"


@pytest.fixture(autouse=True)
def user_key(isolated_user_config):
    """The user's own key: their runs are signed and resume without --trust."""
    from snapstate_capture.trust import keys

    return keys.generate_key()


def start(tmp_path: Path) -> tuple[Path, Path]:
    path, side = tmp_path / "agent.snap", tmp_path / "side.txt"
    done = run_python(str(PROGRAM), str(path), str(side), cwd=tmp_path)
    assert done.returncode == snap.EXIT_PAUSED == 75, done.stderr
    return path, side


def test_a_wait_ends_the_process_with_one_line_and_exit_75(tmp_path):
    path, side = start(tmp_path)
    done_stderr = run_python(str(PROGRAM), str(tmp_path / "b.snap"), str(tmp_path / "s2"),
                             cwd=tmp_path).stderr
    lines = done_stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done_stderr
    assert "waiting for 'approval' (Publish draft about cats?)" in lines[0]
    assert "snapstate resume" in lines[0] and "--answer" in lines[0]
    assert side_lines(side) == ["draft cats"]
    runs = runs_json(path)
    assert [r["status"] for r in runs] == ["waiting"]
    pause = runs[0]["pause"]
    assert (pause["pause"], pause["name"], pause["prompt"]) == (
        "wait", "approval", "Publish draft about cats?")
    listed = run_cli("ls", str(path))
    assert "waits for 'approval': Publish draft about cats?" in listed.stdout
    with snap.open_timeline(path) as timeline:
        last = timeline.runs[0].steps[-1]
        assert (last.kind, last.label, last.function) == ("waiting", "approval", "ask")
        assert last.frames[-2].locals["notes"].repr == "{'drafts': ['draft about cats'], 'round': 1}"


def test_two_waits_answered_by_two_resumes_in_other_processes(tmp_path):
    path, side = start(tmp_path)
    first = run_cli("resume", str(path), "--answer", "yes", "--by", "alice", cwd=tmp_path)
    assert first.returncode == 75, first.stderr
    # the line after wait_for, every local as it was, the draft before the wait not redone
    assert ("after approval: cats draft about cats {'drafts': ['draft about cats'], "
            "'round': 1} 'yes'") in first.stdout
    assert side_lines(side) == ["draft cats", "draft cats (yes)"]
    assert "waiting for 'legal'" in first.stdout
    second = run_cli("resume", str(path), "--answer-json", "true", "--by", "bob", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert side_lines(side) == ["draft cats", "draft cats (yes)"]  # nothing ran twice
    uninterrupted = run_python(str(PROGRAM), str(tmp_path / "u.snap"), str(tmp_path / "u.txt"),
                               '["yes", true]', cwd=tmp_path)
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    program_output = [line for line in second.stdout.splitlines()
                      if line.startswith(("after approval:", "final:"))]
    assert program_output == uninterrupted.stdout.splitlines()
    runs = runs_json(path)
    assert [r["status"] for r in runs] == ["waiting", "waiting", "finished"]
    assert runs[1]["parent"]["run"] == runs[0]["id"] and runs[0]["continued_as"] == runs[1]["id"]
    assert runs[2]["parent"]["run"] == runs[1]["id"] and runs[1]["continued_as"] == runs[2]["id"]
    with snap.open_timeline(path) as timeline:
        final = timeline.runs[-1]
        answers = [s for s in final.steps if s.kind == "effect" and s.label in ("approval",
                                                                                  "legal")]
        assert [a.extra["result"].repr for a in answers] == ["'yes'", "True"]
        who = [a.extra["by"].load(trust=True) for a in answers]
        assert [w["user"] for w in who] == ["alice", "bob"]
        assert all(w["host"] and w["login"] and w["at"] > 0 for w in who)
    assert run_cli("verify", str(path)).returncode == 0
    assert "no waiting or sleeping runs" in run_cli("waiting", str(tmp_path)).stdout


def test_gc_keeps_a_run_that_waits_for_an_answer_until_it_is_continued(tmp_path):
    """``gc --keep-runs 1`` removed a waiting run (helper-40: 1 of 1): the person's answer,
    days later, had nothing left to continue."""
    path, side = start(tmp_path)
    other = run_python(str(PROGRAM), str(path), str(tmp_path / "s2"), cwd=tmp_path)
    assert other.returncode == 75, other.stderr
    waiting = [r["id"] for r in runs_json(path)]
    done = run_cli("gc", str(path), "--keep-runs", "0")
    assert done.returncode == 0, done.stderr
    assert "removed 0 run(s)" in done.stdout
    assert "kept 2 run(s) that wait for an answer or sleep" in done.stdout
    assert waiting[0][:8] in done.stdout and "waiting" in done.stdout
    data = json.loads(run_cli("gc", str(path), "--keep-runs", "0", "--json").stdout)
    assert [r["id"] for r in data["kept_paused"]] == waiting and not data["removed_runs"]
    assert "waiting for 'approval'" in run_cli("waiting", str(path)).stdout
    answered = run_cli("resume", str(path), "--run", waiting[0], "--answer", "yes",
                       cwd=tmp_path)
    assert answered.returncode == 75, answered.stderr
    done = run_cli("gc", str(path), "--keep-runs", "1", "--json")
    removed = [r["id"] for r in json.loads(done.stdout)["removed_runs"]]
    assert removed == [waiting[0]]  # answered: its continuation holds what it needs
    assert [r["id"] for r in runs_json(path)][0] == waiting[1]


def test_a_bad_answer_is_refused_with_the_reason_and_nothing_is_recorded(tmp_path):
    path, side = start(tmp_path)
    assert run_cli("resume", str(path), "--answer", "yes").returncode == 75
    before = runs_json(path)
    refused = run_cli("resume", str(path), "--answer-json", '"maybe"')
    assert refused.returncode == 2
    assert "'maybe' is not of type 'boolean'" in refused.stderr
    assert "nothing was recorded" in refused.stderr and "Traceback" not in refused.stderr
    assert runs_json(path) == before
    assert side_lines(side) == ["draft cats", "draft cats (yes)"]
    (tmp_path / "verdict.json").write_text("false\n")
    ok = run_cli("resume", str(path), "--answer-file", str(tmp_path / "verdict.json"))
    assert ok.returncode == 0, ok.stderr  # the lease was not kept by the refused resume
    assert "final: draft about cats (yes) False" in ok.stdout


def test_a_waiting_run_can_be_answered_from_python(tmp_path):
    path, _ = start(tmp_path)
    result = snap.resume(path, answer="yes", by="chat-bot", capture_output=True)
    assert result["fork_status"] == "waiting" and result["exit_code"] == 75
    assert result["pause"]["name"] == "legal"
    with pytest.raises(snap.SnapStateError, match="is not of type 'boolean'"):
        snap.resume(path, answer="nope")
    result = snap.resume(path, answer=True, capture_output=True)
    assert result["fork_status"] == "finished"
    with pytest.raises(snap.SnapStateError, match="finished"):
        snap.resume(path, answer=True)


def test_waiting_lists_open_waits_across_files(tmp_path):
    start(tmp_path)
    other = tmp_path / "more"
    other.mkdir()
    run_python(str(PROGRAM), str(other / "b.snap"), str(other / "s"), cwd=other)
    listed = run_cli("waiting", str(tmp_path), "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)["waiting"]
    assert sorted(Path(r["file"]).name for r in rows) == ["agent.snap", "b.snap"]
    assert {r["prompt"] for r in rows} == {"Publish draft about cats?"}
    missing = run_cli("waiting", str(tmp_path / "nope.snap"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_resume_on_a_terminal_asks_until_the_answer_fits(tmp_path):
    import os
    import pty
    import subprocess
    import sys

    from tests.conftest import ROOT

    path, side = start(tmp_path)
    assert run_cli("resume", str(path), "--answer", "yes").returncode == 75
    main, child_end = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "snapstate_inspect", "resume", str(path)],
                             stdin=child_end, stdout=child_end, stderr=child_end, env=env)
    os.close(child_end)
    seen = b""

    def read_until(text: bytes) -> None:
        nonlocal seen
        while text not in seen:
            chunk = os.read(main, 4096)
            assert chunk, seen
            seen += chunk

    read_until(b"answer> ")
    assert b"run waits for 'legal': Legal ok?" in seen and b'schema: {"type": "boolean"}' in seen
    os.write(main, b"maybe\n")
    read_until(b"is not of type 'boolean'")
    os.write(main, b"true\n")
    assert child.wait(timeout=120) == 0
    try:
        while True:
            chunk = os.read(main, 4096)
            if not chunk:
                break
            seen += chunk
    except OSError:
        pass
    os.close(main)
    assert b"final: draft about cats (yes) True" in seen
    assert [r["status"] for r in runs_json(path)] == ["waiting", "waiting", "finished"]


def test_the_recording_process_never_imports_jsonschema(tmp_path):
    program = tmp_path / "p.py"
    program.write_text(
        "import sys\nimport snapstate_capture as snap\n"
        "try:\n"
        "    with snap.record(sys.argv[1]):\n"
        "        snap.wait_for('x', prompt='?', schema={'type': 'boolean'})\n"
        "finally:\n"
        "    print('jsonschema' in sys.modules, 'pydantic' in sys.modules)\n")
    done = run_python(str(program), str(tmp_path / "p.snap"), cwd=tmp_path)
    assert done.returncode == 75 and done.stdout.strip() == "False False", done.stderr


def test_the_worker_answers_waiting_runs_whose_answer_arrived(tmp_path):
    path, side = start(tmp_path)
    answers = tmp_path / "answers"
    answers.mkdir()
    waiting = runs_json(path)[0]["id"]
    (answers / f"{waiting[:8]}.txt").write_text("yes\n")
    done = run_cli("worker", str(path), "--once", "--answers-from", str(answers))
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert f"{waiting[:8]} answered: continued as " in line and "waiting for 'legal'" in line
    assert (answers / "done" / f"{waiting[:8]}.txt").exists()
    legal = runs_json(path)[-1]["id"]
    (answers / f"{legal[:8]}.json").write_text('"not a boolean"')
    refused = run_cli("worker", str(path), "--once", "--answers-from", str(answers))
    assert f"{legal[:8]} refused: " in refused.stdout and "is not of type 'boolean'" in \
        refused.stdout
    assert (answers / "refused" / f"{legal[:8]}.json.why").exists()
    assert [r["status"] for r in runs_json(path)] == ["waiting", "waiting"]
    assert side_lines(side) == ["draft cats", "draft cats (yes)"]


def test_two_answer_files_for_one_run_are_both_left_and_said(tmp_path):
    """The worker used one of ``RUN.txt`` and ``RUNPREFIX.json`` and left the other without
    a word (helper-40)."""
    path, side = start(tmp_path)
    answers = tmp_path / "answers"
    answers.mkdir()
    waiting = runs_json(path)[0]["id"]
    (answers / f"{waiting[:8]}.txt").write_text("yes\n")
    (answers / f"{waiting[:4]}.json").write_text('"no"')
    done = run_cli("worker", str(path), "--once", "--answers-from", str(answers))
    assert f"{waiting[:8]} refused: " in done.stdout and "2 answers for run" in done.stdout
    assert f"{waiting[:8]}.txt" in done.stdout and f"{waiting[:4]}.json" in done.stdout
    assert sorted(p.name for p in answers.iterdir()) == [f"{waiting[:4]}.json",
                                                         f"{waiting[:8]}.txt"]
    assert [r["status"] for r in runs_json(path)] == ["waiting"]
    assert side_lines(side) == ["draft cats"]


def test_a_worker_that_finds_the_run_continued_meanwhile_skips_it(tmp_path):
    """Two ``worker --once`` on one file: the one that came second logged ``failed`` and
    exited 1 on a file, where a store's said ``skipped`` (helper-40: 2 of 4)."""
    from snapstate_capture.durable.worker import _one

    path, side = start(tmp_path)
    waiting = runs_json(path)[0]["id"]
    first = run_cli("resume", str(path), "--answer", "yes", cwd=tmp_path)
    assert first.returncode == 75, first.stderr
    events = []
    used = _one(path, waiting, "answered", {"answer": "no"}, False, False, events.append)
    assert not used and [e.action for e in events] == ["skipped"], events
    assert "already continued as" in events[0].detail
    assert side_lines(side) == ["draft cats", "draft cats (yes)"]


def test_a_worker_pass_that_failed_on_a_file_exits_non_zero(tmp_path):
    start(tmp_path)  # a waiting run beside the bad file: still listed, nothing to do
    (tmp_path / "notes.snap").write_text("not a timeline")
    done = run_cli("worker", str(tmp_path), "--once")
    assert done.returncode == 1, done.stderr
    assert "notes.snap" in done.stdout and "failed: " in done.stdout


TRACED_WAITS = """\
import sys

import snapstate_capture as snap

SIDE = sys.argv[1]


@snap.effect(name="draft")
def draft(topic):
    with open(SIDE, "a") as handle:
        handle.write(f"draft {topic}\\n")
    return f"draft on {topic}"


def main():
    text = draft("cats")
    answer = snap.wait_for("ok", prompt="go?")
    print("after", answer, text)
    legal = snap.wait_for("legal", prompt="legal?")
    print("legal", legal, answer)


main()
"""


def test_a_traced_run_waits_and_resumes_twice_at_the_line_after_each_wait(tmp_path):
    """Recorded with tracing (``snapstate record``): each resume replays the run to its
    ``waiting`` step (the draft served), journals the answer and goes on live, traced, as
    the continuation; the second resume replays the first continuation."""
    program = tmp_path / "traced_wait.py"
    program.write_text(TRACED_WAITS)
    path, side = tmp_path / "t.snap", tmp_path / "side.txt"
    done = run_cli("record", "--trace", "calls", "-o", str(path), str(program), str(side),
                   cwd=tmp_path)
    assert done.returncode == 75, done.stderr
    assert f"answer with: snapstate resume {path}" in done.stderr
    first = run_cli("resume", str(path), "--answer", "yes", "--by", "alice", cwd=tmp_path)
    assert first.returncode == 75, first.stdout + first.stderr
    printed = first.stdout.splitlines()
    assert "after yes draft on cats" in printed and "waiting for 'legal'" in first.stdout
    assert not [line for line in printed if line.startswith("legal ")]
    second = run_cli("resume", str(path), "--answer", "ok", "--by", "bob", cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "legal ok yes" in second.stdout
    assert side_lines(side) == ["draft cats"]  # drafted once, when recorded
    runs = runs_json(path)
    assert [r["status"] for r in runs] == ["waiting", "waiting", "finished"]
    with snap.open_timeline(path) as timeline:
        waited, resumed, done_run = timeline.runs
        assert resumed.continues == waited.id and done_run.continues == resumed.id
        assert timeline.engine.run_has_chunks(done_run.id)  # the continuation is traced too
        who = [(row[5], json.loads(row[-1])["w"]["user"])
               for row in timeline.engine.effect_rows(done_run.id) if row[5] in ("ok", "legal")]
        assert who == [("ok", "alice"), ("legal", "bob")]  # each answer, journaled with who
    verified = run_cli("verify", str(path))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_langgraph_node_that_waits_resumes_although_a_checkpoint_was_in_flight(tmp_path):
    """The wait ends the process while LangGraph's pool may still be storing the checkpoint
    before it: that call has no journal row. Its resume ended there as "the recording ends
    here" and exit 0, the answer unused and nothing published (helper-40: 10 of 18). It waits
    now for the replay to reach the wait, and then runs for real."""
    program = ROOT / "tests" / "corpus" / "programs" / "langgraph_wait.py"
    for n in range(4):
        path, ledger = tmp_path / f"graph{n}.snap", tmp_path / f"ledger{n}.txt"
        started = run_python(str(program), str(path), str(ledger), cwd=tmp_path)
        assert started.returncode == 75, started.stderr
        resumed = run_cli("resume", str(path), "--answer", "yes", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr + resumed.stdout
        assert "published 1" in resumed.stdout, resumed.stdout + resumed.stderr
        assert ledger.read_text().splitlines() == ["write", "publish"]
        assert [r["status"] for r in runs_json(path)] == ["waiting", "finished"]


def test_the_pause_line_says_answer_text_for_a_choice_of_strings():
    """A wait whose schema is a choice of strings (``{"enum": ["yes", "no"]}``) said
    ``--answer-json JSON``, where ``--answer yes`` is what a person types (helper-42)."""
    from snapstate_capture.capture.answers import parse_typed, wants_json
    from snapstate_capture.capture.waits import schema_spec

    for schema, wanted in (({"enum": ["yes", "no"]}, False), ({"type": "string"}, False),
                           ({"const": "ok"}, False), ({"enum": ["yes", 1]}, True),
                           ({"type": "boolean"}, True), (None, False)):
        assert wants_json(schema_spec(schema)) is wanted, schema
    assert parse_typed("yes", schema_spec({"enum": ["yes", "no"]})) == "yes"


def test_a_second_continuation_of_one_wait_is_not_pushed_beside_the_first(tmp_path):
    """A waiting run copied to two files and answered in each: pushing the second answer's
    continuation beside the first put two continuations of one wait in a file, and resuming
    both ran the effects after the wait twice (helper-41)."""
    path, side = start(tmp_path)
    copy = tmp_path / "copy.snap"
    shutil.copy(path, copy)
    assert run_cli("resume", str(path), "--answer", "no", cwd=tmp_path).returncode == 75
    assert run_cli("resume", str(copy), "--answer", "yes", cwd=tmp_path).returncode == 75
    second = runs_json(copy)[-1]["id"]
    pushed = run_cli("push", str(copy), str(path), "--run", second)
    assert pushed.returncode == 2, pushed.stdout + pushed.stderr
    assert "was continued there already" in pushed.stderr
    assert "nothing was copied" in pushed.stderr
    assert len(runs_json(path)) == 2


def test_a_worker_that_keeps_running_says_once_that_it_is_there(tmp_path):
    """Without ``--once`` the worker sat silent until something was due (helper-42: 45 s of a
    blank terminal)."""
    import os
    import subprocess
    import sys

    start(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    worker = subprocess.Popen([sys.executable, "-m", "snapstate_inspect", "worker",
                               str(tmp_path), "--interval", "30"], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = worker.stderr.readline()
    finally:
        worker.terminate()
        worker.communicate(timeout=30)
    assert line.startswith(f"snapstate worker: looking at {tmp_path} every 30 s"), line
