"""Durable waits on a shared PostgreSQL store (issue 17 over ``store.engine``), with real
processes and a real server: a program records into a ``postgresql://`` URL and waits;
``snapstate waiting URL`` lists it; ``snapstate resume URL --answer`` continues it in another
process; ``snapstate worker URL --answers-from`` answers the second wait (due times are the same on
every engine: tests/e2e/test_durable_sleep.py)."""

from __future__ import annotations

import json
import time

import pytest

import snapstate_capture as snap
from tests.conftest import PROGRAMS, run_cli, run_python


@pytest.fixture(autouse=True)
def user_key(isolated_user_config):
    """The user's own key: their runs are signed and resume without --trust."""
    from snapstate_capture.trust import keys

    return keys.generate_key()


@pytest.fixture
def store(pg_server):
    return pg_server.create_database(f"durable_{time.monotonic_ns()}")


def _statuses(url: str) -> list[tuple[str, str | None]]:
    with snap.open_timeline(url) as timeline:
        return [(run.status, run.continues) for run in timeline.runs]


def test_a_run_waits_in_a_store_and_is_answered_by_resume_and_by_the_worker(store, tmp_path):
    side = tmp_path / "side.txt"
    program = PROGRAMS / "durable_agent.py"
    done = run_python(str(program), store, str(side), cwd=tmp_path)
    assert done.returncode == 75, done.stderr
    assert "snapstate resume postgresql://" in done.stderr and "waiting for 'approval'" in done.stderr

    listed = run_cli("waiting", store)
    assert listed.returncode == 0, listed.stderr
    assert "waiting for 'approval'" in listed.stdout and "Publish draft about cats?" in listed.stdout

    first = run_cli("resume", store, "--answer", "yes", "--by", "alice", cwd=tmp_path)
    assert first.returncode == 75, first.stderr + first.stdout
    assert "after approval: cats draft about cats" in first.stdout and "'yes'" in first.stdout
    assert side.read_text().splitlines() == ["draft cats", "draft cats (yes)"]
    with snap.open_timeline(store) as timeline:
        waiting = timeline.runs[-1]
        assert waiting.status == "waiting" and waiting.pause["name"] == "legal"
        assert timeline.runs[0].continued_as == waiting.id

    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / f"{waiting.id[:8]}.json").write_text("true")
    worked = run_cli("worker", store, "--once", "--answers-from", str(answers), cwd=tmp_path)
    assert worked.returncode == 0, worked.stderr
    assert f"{waiting.id[:8]} answered: continued as" in worked.stdout
    assert "(finished)" in worked.stdout and "postgresql://" in worked.stdout
    assert side.read_text().splitlines() == ["draft cats", "draft cats (yes)"]  # none redone
    statuses = _statuses(store)
    assert [s for s, _ in statuses] == ["waiting", "waiting", "finished"]
    assert statuses[1][1] is not None and statuses[2][1] is not None  # one chain
    assert run_cli("waiting", store, "--json").stdout.count('"run"') == 0
    verified = run_cli("verify", store, "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr  # every run sealed
    assert [r["intact"] for r in json.loads(verified.stdout)["runs"]] == [True] * 3



def test_a_wait_answered_before_a_push_is_not_answered_again_in_the_store(store, tmp_path):
    """The store's lease row says a run was continued; it is not pushed or pulled with the
    runs. A wait answered in a file, then pushed with its continuation, took a second answer
    in the store, and the effects after it ran again (helper-40: 2 of 2)."""
    side = tmp_path / "side.txt"
    path = tmp_path / "agent.snap"
    done = run_python(str(PROGRAMS / "durable_agent.py"), str(path), str(side), cwd=tmp_path)
    assert done.returncode == 75, done.stderr
    first = run_cli("resume", str(path), "--answer", "yes", "--by", "alice", cwd=tmp_path)
    assert first.returncode == 75, first.stderr + first.stdout
    with snap.open_timeline(path) as timeline:
        original, continuation = (run.id for run in timeline.runs)
    for run_id in (original, continuation):
        pushed = run_cli("push", str(path), store, "--run", run_id)
        assert pushed.returncode == 0, pushed.stderr
    drafts = side.read_text()
    again = run_cli("resume", store, "--run", original, "--answer", "no", "--by", "bob",
                    cwd=tmp_path)
    assert again.returncode != 0, again.stdout
    assert f"already continued as {continuation[:8]}" in again.stderr, again.stderr
    assert side.read_text() == drafts  # no effect ran again
    with snap.open_timeline(store) as timeline:
        assert len(timeline.runs) == 2
