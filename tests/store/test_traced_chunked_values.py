"""A traced run's big list, captured by chunks (its payload a manifest of chunk pieces), reads
back whole from both engines: the trace writer hands the pieces' manifest flags through the
file writer and through a database store's spool alike."""

from __future__ import annotations

import snapstate_capture as snap

HERE = __file__


def peek():
    return None


def appender(n):
    lines = [f"line {i}" for i in range(1100)]
    for i in range(n):
        lines.append(f"more {i}")
        peek()
    return len(lines)


def test_a_traced_big_list_reads_back_whole(store_location):
    with snap.record(store_location, trace="calls", include=[HERE]):
        appender(5)
    with snap.open_timeline(store_location, trust=True) as timeline:
        run = timeline.runs[-1]
        seen = [step.frames[-2].locals["lines"].load() for step in run.steps
                if step.kind == "call" and step.function == "peek"]
    base = [f"line {i}" for i in range(1100)]
    assert seen == [base + [f"more {j}" for j in range(i + 1)] for i in range(5)]
