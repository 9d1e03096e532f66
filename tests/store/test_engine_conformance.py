"""One suite, every engine (``store.engine``'s contract): what is recorded reads back the same,
verifies, diffs identical with itself, and survives concurrent recorders — on a timeline file and
on a real PostgreSQL store alike."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import snapstate_capture as snap
from snapstate_capture.trust.keys import find_key
from snapstate_capture.trust.verify import verify_timeline
from tests.conftest import ROOT


@snap.effect(name="lookup")
def lookup(term: str) -> dict:
    return {"term": term, "hits": len(term)}


def _record(location: str, name: str, steps: int = 6) -> None:
    with snap.record(location, name=name):
        notes: list[str] = []
        for i in range(steps):
            notes.append(f"note {i}")
            result = lookup(f"term{i}")
            snap.checkpoint("noted", i=i, hits=result["hits"])


def test_runs_read_back_as_recorded(store_location):
    _record(store_location, "first")
    _record(store_location, "second", steps=3)
    with snap.open_timeline(store_location) as timeline:
        runs = timeline.runs
        assert [(r.name, r.status) for r in runs] == [("first", "finished"), ("second", "finished")]
        assert runs[0].seq < runs[1].seq
        assert timeline.run(runs[0].id[:6]).id == runs[0].id
        steps = runs[0].steps
        assert len(steps) == 12  # an effect step and a checkpoint per round
        assert [s.kind for s in steps[:2]] == ["effect", "checkpoint"]
        last = steps[-1]
        assert last.extra["i"].repr == "5" and last.extra["hits"].repr == "5"
        assert last.frames[-1].locals["notes"].load() == [f"note {i}" for i in range(6)]
        assert [s.index for s in steps[3:7]] == [3, 4, 5, 6]
        assert steps.find(0, kind="checkpoint") == 1
        assert steps.matching(0, 12, label="noted") == [1, 3, 5, 7, 9, 11]
        assert [len(frame.source) > 0 for frame in last.frames] == [True] * len(last.frames)


def test_a_recording_verifies_and_diffs_identical_with_itself(store_location):
    _record(store_location, "one")
    with snap.open_timeline(store_location) as timeline:
        report = verify_timeline(timeline, find_key())
    assert [(r.signature, r.chain_broken_at, r.chain_problem) for r in report.runs] == \
        [("valid", None, None)]
    done = subprocess.run([sys.executable, "-m", "snapstate_inspect", "diff", store_location,
                           store_location], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "identical" in done.stdout, done.stderr


def test_a_traced_program_records_through_the_writer_process(store_location, tmp_path):
    program = tmp_path / "loop.py"
    program.write_text("total = 0\nfor i in range(40):\n    total += i\nprint(total)\n")
    done = subprocess.run([sys.executable, "-m", "snapstate_inspect", "record", "-o",
                           store_location, "--trace", "lines", str(program)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "780\n"
    with snap.open_timeline(store_location) as timeline:
        steps = timeline.runs[-1].steps
        assert len(steps) > 80
        assert steps[-1].frames[-1].locals["total"].repr == "780"


def test_concurrent_recorders_each_keep_every_step(store_location, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import snapstate_capture as snap
        with snap.record(sys.argv[1], name="w" + sys.argv[2]):
            for i in range(100):
                snap.checkpoint("tick", i=i)
    """))
    _record(store_location, "setup", steps=1)  # the store exists (creating one is issue 22's)
    procs = [subprocess.Popen([sys.executable, str(script), store_location, str(n)])
             for n in range(6)]
    assert [p.wait(timeout=300) for p in procs] == [0] * 6
    with snap.open_timeline(store_location) as timeline:
        runs = [r for r in timeline.runs if r.name != "setup"]
        assert sorted(r.name for r in runs) == [f"w{n}" for n in range(6)]
        assert len({r.seq for r in runs}) == 6
        assert all(len(r.steps) == 100 and r.status == "finished" for r in runs)
        report = verify_timeline(timeline, find_key())
    assert all(r.chain_broken_at is None and r.signature == "valid" for r in report.runs)
