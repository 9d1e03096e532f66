"""Code that changed while a run waited (issue 17 point 5): ``snap.patched`` lets a run recorded
under the old code resume under the new one — its recorded steps replay through the old branch
(the lines around the new blocks moved: they are mapped), the continuation takes the new one —
while a change outside patched blocks is refused as drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli, run_python
from tests.e2e.replay_helpers import runs_json, side_lines

OLD = '''import sys

import snapstate_capture as snap

SIDE = sys.argv[2]


@snap.effect(name="send")
def send(text):
    with open(SIDE, "a", encoding="utf-8") as handle:
        handle.write(text + "\\n")
    return len(text)


def main():
    with snap.record(sys.argv[1], name="report"):
        sent = send("hello")
        answer = snap.wait_for("ok", prompt="Send the report?")
        send(f"report ({answer})")
        print("done", sent, answer)


main()
'''

NEW = OLD.replace('''        sent = send("hello")
        answer = snap.wait_for("ok", prompt="Send the report?")
        send(f"report ({answer})")
''', '''        if snap.patched("greeting-v2"):
            sent = send("hello, world")
        else:
            sent = send("hello")
        answer = snap.wait_for("ok", prompt="Send the report?")
        if snap.patched("report-v2"):
            send(f"report v2 ({answer})")
        else:
            send(f"report ({answer})")
''')


@pytest.fixture(autouse=True)
def user_key(isolated_user_config):
    from snapstate_capture.trust import keys

    return keys.generate_key()


def _waiting(tmp_path: Path) -> tuple[Path, Path, Path]:
    program, path, side = tmp_path / "report.py", tmp_path / "report.snap", tmp_path / "side"
    program.write_text(OLD)
    done = run_python(str(program), str(path), str(side), cwd=tmp_path)
    assert done.returncode == 75, done.stderr
    return program, path, side


def test_a_run_recorded_under_old_code_resumes_under_patched_new_code(tmp_path):
    program, path, side = _waiting(tmp_path)
    program.write_text(NEW)  # the deploy: lines move, new code behind patched()
    resumed = run_cli("resume", str(path), "--answer", "yes", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert "inside patched blocks (greeting-v2, report-v2)" in resumed.stdout
    assert "done 5 yes" in resumed.stdout  # the recorded greeting, through the old branch
    assert side_lines(side) == ["hello", "report v2 (yes)"]  # nothing resent; new branch live
    assert [r["status"] for r in runs_json(path)] == ["waiting", "finished"]
    replayed = run_cli("replay", str(path), cwd=tmp_path)  # the continuation, under new code
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence" in replayed.stdout and "patched blocks only" in replayed.stdout
    assert side_lines(side) == ["hello", "report v2 (yes)"]


def test_a_change_outside_patched_blocks_is_refused_as_drift(tmp_path):
    program, path, side = _waiting(tmp_path)
    program.write_text(NEW.replace('print("done", sent, answer)', 'print("finished", sent)'))
    refused = run_cli("resume", str(path), "--answer", "yes", cwd=tmp_path)
    assert refused.returncode == 2
    assert "outside patched blocks (" in refused.stderr and "report.py:" in refused.stderr
    assert [r["status"] for r in runs_json(path)] == ["waiting"]
    assert side_lines(side) == ["hello"]
