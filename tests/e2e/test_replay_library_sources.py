"""``patch_nondeterminism`` pins clocks, ``datetime``, uuids, ``secrets``, ``random`` and
``os.urandom`` whoever calls them (issue 15 point 2): library code included, names bound before
the block (``from datetime import datetime``) included. The run replays without divergence;
``snapstate record --patch-nondeterminism`` does the same for a program that knows nothing of
snapstate."""

from __future__ import annotations

import snapstate_capture as snap
from tests.conftest import PROGRAMS, run_cli, run_python
from tests.e2e.replay_helpers import replay_json


def _labels(path):
    with snap.open_timeline(path) as timeline:
        return [s.label for s in timeline.runs[-1].steps if s.kind == "effect"]


def test_library_and_early_bound_sources_replay_exactly(tmp_path):
    path = tmp_path / "sources.snap"
    done = run_python(str(PROGRAMS / "library_sources.py"), str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    labels = _labels(path)
    for name in ("time.time", "random.randrange",  # inside email: formatdate, a boundary
                 "datetime.datetime.now", "datetime.date.today", "time.time_ns",
                 "time.perf_counter", "time.strftime", "uuid.uuid1", "uuid.uuid4",
                 "secrets.token_hex", "secrets.randbelow", "random.sample", "os.urandom"):
        assert name in labels, (name, labels)
    assert labels.count("time.strftime") == 1  # strftime with a time given reads no clock
    assert labels.count("datetime.datetime.now") == 2
    for _ in range(2):
        result, data = replay_json(path)
        assert data["status"] == "ok", data
        assert result.returncode == 0


def test_snapstate_record_patch_nondeterminism(tmp_path):
    program = tmp_path / "stamp.py"
    program.write_text("import uuid\nfrom datetime import datetime\n"
                       "stamp = (datetime.now().isoformat(), uuid.uuid4().hex)\n"
                       "print(stamp)\n")
    path = tmp_path / "stamp.snap"
    done = run_cli("record", "--patch-nondeterminism", "-o", str(path), str(program),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.strip()
    assert _labels(path) == ["datetime.datetime.now", "uuid.uuid4"]
    with snap.open_timeline(path) as timeline:
        assert timeline.runs[-1].entry["record"]["patch_nondeterminism"] is True
    result, data = replay_json(path)
    assert data["status"] == "ok", data
    assert printed in result.stdout  # the same stamp, served from the journal


def test_a_generator_a_library_makes_draws_the_recorded_numbers(tmp_path):
    """A ``random.Random()`` made without a seed is seeded from the OS (sympy makes one at
    import to shuffle the order it checks assumptions in: unpinned, a traced sympy run
    diverged about one replay in five): under the patch its seed is an effect, so every draw
    it makes replays, and one made with a seed is left alone."""
    helper = tmp_path / "shuffler.py"
    helper.write_text("import random\n_rng = random.Random()\nseeded = random.Random(5)\n"
                      "def order(items):\n    items = list(items)\n    _rng.shuffle(items)\n"
                      "    return items\n")
    program = tmp_path / "uses_shuffler.py"
    program.write_text("import shuffler\nimport snapstate_capture as snap\n"
                       "picked = shuffler.order(range(20))\n"
                       "snap.checkpoint('shuffled', picked=picked,\n"
                       "                seeded=shuffler.seeded.random())\n"
                       "print(picked)\n")
    path = tmp_path / "shuffle.snap"
    done = run_cli("record", "--patch-nondeterminism", "-o", str(path), str(program),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _labels(path) == ["random.Random.seed"]  # Random(5) is no effect
    for _ in range(3):
        result, data = replay_json(path)
        assert data["status"] == "ok", data
        assert done.stdout.strip() in result.stdout
