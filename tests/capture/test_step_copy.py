"""Copying a range of a traced run's steps onto another run (``store/step_copy.py``): whole
chunks, chunks cut at either end (a cut start gets the frames' state there as its header), and
the checkpoint rows between them — read back, every copied step is the source's."""

from __future__ import annotations

import snapstate_capture as snap
from snapstate_capture.store import chunks
from snapstate_capture.store.step_copy import copy_steps, cut_chunk
from snapstate_capture.store.writer import TimelineWriter


def _work(rounds: int) -> int:
    total = 0
    for i in range(rounds):
        total += i % 7
        if i == rounds // 2:
            snap.checkpoint("half", total=total)
    return total


def _view(step):
    return (step.kind, step.label, step.function, step.lineno, step.depth,
            [(f.function, f.lineno, {k: v.repr for k, v in f.locals.items()})
             for f in step.frames])


def test_copied_ranges_read_back_as_the_source_steps(tmp_path):
    path = tmp_path / "run.snap"
    with snap.record(path, trace="lines"):
        _work(2500)  # > one chunk of line steps, a checkpoint row in the middle
    with snap.open_timeline(path) as timeline:
        source = timeline.runs[-1]
        count = len(source.steps)
        spans = timeline.engine.chunks_overlapping(source.id, 0, count)
        assert len(spans) >= 2
        first_end = spans[0][0] + spans[0][1]
        ranges = [(0, count), (37, first_end + 50), (first_end - 3, count - 5)]
        writer = TimelineWriter(path)
        ids = []
        try:
            for start, stop in ranges:
                run_id = writer.begin_run(name="copy", entry=source.entry, env={})
                assert copy_steps(source, start, stop, writer, run_id) == stop - start
                writer.end_run(run_id, "finished")
                ids.append(run_id)
        finally:
            writer.close()
        timeline.refresh()
        for (start, stop), run_id in zip(ranges, ids):
            copied = timeline.run(run_id).steps
            assert len(copied) == stop - start
            for offset in range(0, stop - start, 97):  # a sample across every chunk
                assert _view(copied[offset]) == _view(source.steps[start + offset])
            assert _view(copied[-1]) == _view(source.steps[stop - 1])
        assert any(s.kind == "checkpoint" for s in timeline.run(ids[0]).steps)


def test_a_cut_chunk_refuses_a_range_it_does_not_hold():
    data = chunks.encode(chunks.ChunkState().header(), [1 << 20 | 3, 1 << 20 | 4])
    assert cut_chunk(data, 1, 2)[0] == 1
    try:
        cut_chunk(data, 1, 3)
    except ValueError as exc:
        assert "holds 2 steps" in str(exc)
    else:
        raise AssertionError("a range past the chunk's end was cut")
