"""The short version of ``bench/bench_integrity.py`` (issue 22): SIGKILLs at random moments
across checkpoint, traced and effect programs (during create and close too), 6 writers starting
together on a fresh file, and file mutants read by ``ls``, ``show``, ``verify`` and the reader —
every goal 0: no completed step lost, no file unreadable, no run lost to a race, no mutant of
what a reader shows that verify passes, no traceback, hang or memory over 200 MB."""

from __future__ import annotations

import importlib.util
import sys

from tests.conftest import ROOT


def _bench():
    spec = importlib.util.spec_from_file_location("bench_integrity",
                                                  ROOT / "bench" / "bench_integrity.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["bench_integrity"] = module  # its dataclasses and worker processes look it up
    spec.loader.exec_module(module)
    return module


def test_nothing_lost_nothing_forged(tmp_path):
    bench = _bench()
    tally = bench.run_all(kills=9, races=1, mutants=90, jobs=2, seed=22, work=tmp_path)
    report = bench.report(tally)
    assert tally.kills == 9 and tally.race_writers == 6 and tally.mutants == 90, report
    assert set(tally.kill_moments) == {f"{m}/{t}" for m in bench.MODES
                                      for t in ("create", "steps", "close")}, report
    assert tally.ok(), report
