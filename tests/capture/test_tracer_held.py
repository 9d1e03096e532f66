"""Held traced runs (``record(trace=..., held=True)``, what ``pytest --snapstate`` records each
test into): nothing reaches the file until ``keep()``; ``discard()`` leaves no file and no
writer process; a kept run is the run an unheld recording makes, checkpoint indices included."""

from __future__ import annotations

import os

import pytest

import snapstate_capture as snap

HERE = __file__


def work(n, fail=False):
    total = 0
    marks = []
    for i in range(n):
        total += square(i)
        if i % 3 == 0:
            marks.append(snap.checkpoint("third", i=i))
    if fail:
        total /= 0
    return total, marks


def square(x):
    y = x * x
    return y


#: The record blocks, kept out of the recorded frame's locals (capturing the recorder itself
#: at every step would be most of the test's time).
_BLOCKS: dict = {}


def _record(path, held, n=7, fail=False):
    _BLOCKS[path] = snap.record(path, trace="calls", include=[HERE], held=held)
    with pytest.raises(ZeroDivisionError) if fail else _nothing():
        with _BLOCKS[path]:
            result = work(n, fail)
    return _BLOCKS.pop(path), (None if fail else result)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _shape(path):
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        steps = list(run.steps)
        return run.status, [(s.kind, s.function, s.label) for s in steps], [
            {name: value.repr for name, value in s.frames[-1].locals.items()}
            for s in steps if s.frames and s.kind in ("checkpoint", "exception")]


def test_a_discarded_held_run_writes_nothing(tmp_path):
    path = tmp_path / "held.snap"
    children_before = _children()
    block, result = _record(path, held=True)
    assert not path.exists()  # checkpoints inside did not need the file either
    block.discard()
    assert result[0] == sum(i * i for i in range(7))
    assert not path.exists() and not list(tmp_path.glob("*.snap*"))
    assert _children() == children_before  # no writer process was started


@pytest.mark.parametrize("fail", [False, True])
def test_a_kept_held_run_is_the_run_an_unheld_recording_makes(tmp_path, fail):
    held_path, plain_path = tmp_path / "held.snap", tmp_path / "plain.snap"
    held, held_result = _record(held_path, held=True, fail=fail)
    plain, plain_result = _record(plain_path, held=False, fail=fail)
    assert not held_path.exists()
    assert held.keep() is True
    assert (held_result or (None,))[0] == (plain_result or (None,))[0]
    if not fail:  # checkpoint() returned indices, held or not (they are checked below)
        assert None not in held_result[1] and len(held_result[1]) == len(plain_result[1])
    status, kinds, locals_ = _shape(held_path)
    plain_status, plain_kinds, plain_locals = _shape(plain_path)
    assert status == plain_status == ("failed" if fail else "finished")
    # (threads other tests left running are steps of their own: counts may differ by those)
    mine = [k for k in kinds if k[1] in ("work", "square")]
    assert sorted(set(mine)) == sorted(set(k for k in plain_kinds if k[1] in ("work", "square")))
    def third(rows):  # the checkpoints' locals, but for the indices they hold
        return [{k: v for k, v in row.items() if k != "marks"} for row in rows if "marks" in row]

    assert third(locals_) == third(plain_locals) and third(locals_)
    if not fail:
        for index in held_result[1]:
            assert kinds[index][0] == "checkpoint" and kinds[index][2] == "third"


def _children():
    """Pids of this process's child processes (Linux /proc)."""
    me = str(os.getpid())
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if stat.read().rsplit(")", 1)[1].split()[1] == me:
                        found.add(entry)
            except OSError:
                continue
    return found


def test_keeping_a_held_run_says_nothing_to_the_program(tmp_path):
    """The writer process of a kept run exits after it said the run is stored; its ``Popen``
    was let go of meanwhile and warned ``ResourceWarning: subprocess N is still running``
    into the program (pytest showed it under each failing test; found on attrs' suite)."""
    import gc
    import warnings

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for index in range(3):
            block = snap.record(tmp_path / f"kept{index}.snap", trace="calls", held=True)
            with block:
                sorted([3, 1, 2])
            assert block.keep()
        gc.collect()
    assert [str(w.message) for w in said if w.category is ResourceWarning] == []
