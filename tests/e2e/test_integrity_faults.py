"""Faults that must not go unsaid: a full disk, a failing write, a file deleted or replaced while
recording — each said once, by name, with the run marked ``truncated`` (and why) wherever that
can still be written, every step before the fault intact, the program unchanged (issue 22, 8)."""

from __future__ import annotations

import json
import random
import textwrap

import snapstate_capture as snap
from snapstate_capture.trust.verify import verify_timeline
from tests.conftest import run_cli, run_python


def _lines_about(err: str, path) -> list[str]:
    return [line for line in err.splitlines() if str(path) in line]


def test_a_full_disk_is_said_once_and_the_run_is_marked_truncated(snap_path, capfd):
    with snap.record(snap_path, name="filling") as block:
        for i in range(40):
            if i == 8:  # SQLite's own "database or disk is full" from here on
                conn = block.recorder._writer.engine.connection
                pages = conn.execute("PRAGMA page_count").fetchone()[0]
                conn.execute(f"PRAGMA max_page_count={pages}")
            # incompressible, so that each step needs new pages of its own
            snap.checkpoint("t", i=i, pad=random.Random(i).randbytes(10_000).hex())
    err = capfd.readouterr().err
    said = _lines_about(err, snap_path)
    assert len(said) == 1, err
    assert "recording stopped at step 8: the disk is full" in said[0]
    assert "cannot rollback" not in err
    with snap.open_timeline(snap_path) as timeline:
        run = timeline.runs[-1]
        assert run.status == "truncated"
        assert run.error["reason"] == "the disk is full" and run.error["at_step"] == 8
        assert run.error["ended"] == "finished"
        assert [s.extra["i"].repr for s in run.steps] == [str(i) for i in range(8)]
        assert verify_timeline(timeline, None).intact
    listed = run_cli("ls", str(snap_path))
    assert listed.returncode == 0 and "truncated" in listed.stdout



def test_a_wait_after_a_full_disk_raises_instead_of_saying_the_run_paused(snap_path, capfd):
    """The run could not be paused (its recording had stopped): exiting 75 said a person would
    be asked, and nobody ever was (helper-40: 8 of 8)."""
    import pytest

    from snapstate_capture.capture.waits import WaitNotStored

    with pytest.raises(WaitNotStored, match="could not pause the run"):
        with snap.record(snap_path, name="filling") as block:
            for i in range(12):
                if i == 4:
                    conn = block.recorder._writer.engine.connection
                    pages = conn.execute("PRAGMA page_count").fetchone()[0]
                    conn.execute(f"PRAGMA max_page_count={pages}")
                snap.checkpoint("t", i=i, pad=random.Random(i).randbytes(10_000).hex())
            snap.wait_for("approval", prompt="ok?")
    err = capfd.readouterr().err
    assert "is waiting for" not in err and "snapstate resume" not in err
    with snap.open_timeline(snap_path) as timeline:
        assert timeline.runs[-1].status == "truncated"


PROGRAM = textwrap.dedent('''
    import os, resource, signal, sys
    import snapstate_capture as snap
    path, fault = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    total = 0
    with snap.record(path, name=fault):
        for i in range(30):
            if i == 5:
                if fault == "lost-write":  # the OS refuses to grow the file or its WAL
                    size = max(os.path.getsize(p) for p in (path, path + "-wal")
                               if os.path.exists(p))
                    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
                elif fault == "deleted":
                    os.unlink(path)
                elif fault == "replaced":
                    os.replace(sys.argv[3], path)
            total += i
            snap.checkpoint("t", i=i, pad="y" * 5_000)
    print("total", total)
''')


def _run_fault(tmp_path, fault):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    path = tmp_path / f"{fault}.snap"
    other = tmp_path / "other.snap"
    if fault == "replaced":
        with snap.record(other, name="someone else's"):
            snap.checkpoint("theirs")
    done = run_python(str(script), str(path), fault, str(other))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "total 435"  # the program ran as without snapstate
    return path, done.stderr


def test_a_lost_write_is_said_once_and_earlier_steps_are_kept(tmp_path):
    path, err = _run_fault(tmp_path, "lost-write")
    said = _lines_about(err, path)
    assert len(said) == 1, err
    assert "recording stopped at step" in said[0] and "a write failed" in said[0]
    step = int(said[0].split("recording stopped at step ")[1].split(":")[0])
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        assert len(run.steps) == step >= 5
        assert run.status in ("truncated", "crashed")  # marked where it can still be written
        assert verify_timeline(timeline, None).intact


def test_a_file_deleted_while_recording_is_said_once(tmp_path):
    path, err = _run_fault(tmp_path, "deleted")
    said = _lines_about(err, path)
    assert len(said) == 1 and "the file was deleted while recording" in said[0], err
    assert "recording stopped at step 5" in said[0]
    assert not path.exists()


def test_a_file_replaced_while_recording_is_said_once_and_left_alone(tmp_path):
    path, err = _run_fault(tmp_path, "replaced")
    said = _lines_about(err, path)
    assert len(said) == 1 and "replaced by another while recording" in said[0], err
    with snap.open_timeline(path) as timeline:  # the other file, untouched
        assert [(r.name, len(r.steps)) for r in timeline.runs] == [("someone else's", 1)]
        assert verify_timeline(timeline, None).intact


def test_a_traced_run_cut_short_by_a_lost_write_says_so_once(tmp_path):
    script = tmp_path / "traced.py"
    script.write_text(textwrap.dedent('''
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (600_000, 600_000))  # the writer inherits it
        import snapstate_capture as snap

        def work(n):
            rows = []
            for i in range(n):
                rows.append("z" * 300 + str(i))
            return len(rows)

        with snap.record(sys.argv[1], trace="lines", include=[__file__]):
            for turn in range(40):
                work(400)
                snap.checkpoint("turn", turn=turn)
        print("done")
    '''))
    path = tmp_path / "traced.snap"
    done = run_python(str(script), str(path), timeout=180)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    said = _lines_about(done.stderr, path)
    assert len(said) == 1 and "recording stopped at step" in said[0], done.stderr
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        assert run.status in ("truncated", "crashed")
        if run.status == "truncated":
            assert "a write failed" in run.error["reason"]
        assert verify_timeline(timeline, None).intact
    shown = run_cli("show", str(path), "--json")
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["run"]["status"] in ("truncated", "crashed")
