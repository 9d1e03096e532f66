"""A traced frame's big list or dict is captured by chunks (``tracing/chunked_locals.py``): what
each call step shows of its caller is still exactly the caller's value then — after appends,
an element replaced, a dict element edited in place far from the end, keys set and deleted —
and a loop appending per call stores about what it appended, not the list again each time."""

from __future__ import annotations

import contextlib
import copy

import snapstate_capture as snap
from snapstate_capture.capture import chunked
from snapstate_capture.tracing import call_frame
from snapstate_capture.tracing.value_encoder import ValueEncoder

HERE = __file__
SEEN: list = []


def peek():
    return None


def grow_and_edit(n):
    words = [f"word-{i}" for i in range(1500)]
    rows = [{"id": i, "tags": ["a"]} for i in range(200)]
    table = {f"k{i}": i for i in range(1200)}
    index = {f"doc{i}": [i] for i in range(100)}
    for i in range(n):
        words.append(f"new-{i}")
        rows.append({"id": 1000 + i, "tags": []})
        table[f"n{i}"] = i
        index[f"new{i}"] = [i]
        if i == 3:
            rows[5]["tags"].append("edited")  # in place, in an old chunk of containers
            index["doc2"].append("edited")
        if i == 5:
            words[10] = "replaced"
            del table["k7"]
        if i == 7:
            rows[150] = {"id": "swapped"}
        SEEN.append(copy.deepcopy((words, rows, table, index)))
        peek()
    return len(words)


def test_each_call_shows_the_callers_big_values_exactly(snap_path):
    SEEN.clear()
    with snap.record(snap_path, trace="calls", include=[HERE]):
        grow_and_edit(10)
    with snap.open_timeline(snap_path, trust=True) as timeline:
        shown = []
        for step in timeline.runs[-1].steps:
            if step.kind == "call" and step.function == "peek":
                frame = step.frames[-2]
                assert frame.function == "grow_and_edit"
                shown.append(tuple(frame.locals[name].load()
                                   for name in ("words", "rows", "table", "index")))
    assert len(shown) == 10
    for at, (expected, got) in enumerate(zip(SEEN, shown)):
        assert got == expected, f"call {at}"


def test_an_append_per_call_sends_about_what_was_appended(snap_path):
    """The bytes handed to the writer for 300 appends to a 3,000-string list stay far below
    300 copies of the list (what the whole-value path sent)."""
    sent: list = []
    encoder = ValueEncoder(snap.CaptureOptions(), sent.append)
    words = [f"a fairly long word number {i}" for i in range(3000)]
    first = encoder.chunked(1, "words", words)
    assert first is not None and first[1] is not None
    whole = sum(len(item[2]) for item in sent)
    sent.clear()
    refs = set()
    for i in range(300):
        words.append(f"appended {i}")
        refs.add(encoder.chunked(1, "words", words))
    assert len(refs) == 300  # a new reference for every new content
    appended = sum(len(item[2]) for item in sent)
    assert appended < 300 * whole / 20, (appended, whole)
    assert encoder.chunked(1, "words", words) in refs  # unchanged: the last reference again


def test_short_lists_secret_names_and_unpicklable_chunks_are_left_to_the_whole_value_path():
    encoder = ValueEncoder(snap.CaptureOptions(), [].append)
    assert encoder.chunked(1, "short", list(range(100))) is None
    assert encoder.chunked(1, "api_key", [str(i) for i in range(5000)]) is None
    lambdas = [lambda: i for i in range(100)]
    assert encoder.chunked(1, "callbacks", lambdas) is None
    huge = [{"text": f"{i:06d}" + "x" * 1000} for i in range(20_000)]  # ~20 MB: bounded
    assert encoder.chunked(1, "huge", huge) is None
    assert encoder.chunked(1, "numbers", list(range(256))) is not None  # one chunk
    assert encoder.chunked(1, "few", [{"i": i} for i in range(63)]) is None  # under 64
    assert encoder.chunked(1, "rows", [{"i": i} for i in range(64)]) is not None
    assert call_frame._SCALARS_MAX == chunked.SCALAR_CHUNK  # longer: compared by chunks


def held_loop(n):
    lines = [f"line {i}" for i in range(600)]
    indexes = []
    for i in range(n):
        lines.append(f"more {i}")
        indexes.append(snap.checkpoint(f"c{i}"))
        peek()
    return indexes


def test_a_held_run_numbers_and_keeps_chunked_values(snap_path):
    """``pytest --snapstate``'s shape: a held run (its checkpoints numbered in this process by
    ``StepTally``, which reads the held chunk pieces too) kept afterwards reads back whole."""
    block = snap.record(snap_path, trace="calls", include=[HERE], held=True)
    with block:
        indexes = held_loop(4)
    assert block.keep()
    with snap.open_timeline(snap_path, trust=True) as timeline:
        steps = timeline.runs[-1].steps
        assert [steps[i].label for i in indexes] == ["c0", "c1", "c2", "c3"]
        shown = [step.frames[-2].locals["lines"].load() for step in steps
                 if step.kind == "call" and step.function == "peek"]
    base = [f"line {i}" for i in range(600)]
    assert shown == [base + [f"more {j}" for j in range(i + 1)] for i in range(4)]


def truncated(n):
    kept = []
    words = [f"w{i}" for i in range(513)]
    table = {i: str(i) for i in range(257)}
    numbers = list(range(511))
    for step in range(n):
        if step == 1:
            words.pop()           # 513 -> 512: the chunks left hold the same objects
            table.popitem()
            del numbers[256:]
        kept.append(copy.deepcopy((words, table, numbers)))
        peek()
        snap.checkpoint("after")
    return kept


def test_a_list_cut_to_a_whole_number_of_chunks_shows_its_new_length(snap_path):
    """The chunks left after a cut to a multiple of the chunk size hold the same objects: the
    cut itself must still make a new capture (helper-7 found 257 -> 256 shown as 257 at call
    steps; checkpoints showed 513 -> 512 as 513), at call steps and at checkpoints alike."""
    with snap.record(snap_path, trace="calls", include=[HERE]):
        expected = truncated(3)
    with snap.open_timeline(snap_path, trust=True) as timeline:
        steps = timeline.runs[-1].steps
        at_calls = [tuple(step.frames[-2].locals[name].load()
                          for name in ("words", "table", "numbers"))
                    for step in steps if step.kind == "call" and step.function == "peek"]
        at_checkpoints = [tuple(step.frames[-1].locals[name].load()
                                for name in ("words", "table", "numbers"))
                          for step in steps if step.kind == "checkpoint"]
    assert at_calls == expected
    assert at_checkpoints == expected


def _payload_manifests(path) -> int:
    """How many of the file's blobs are manifests (chunked payloads and their groups)."""
    import sqlite3

    from snapstate_capture.store.blobs import MANIFEST

    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT count(*) FROM blobs WHERE codec & ?", (MANIFEST,)).fetchone()[0]


def _rows_at_notes(path) -> tuple[int | None, list[list]]:
    with snap.open_timeline(path, trust=True) as timeline:
        run = timeline.runs[-1]
        return run.entry.get("chunked_locals"), [
            step.frames[-2].locals["rows"].load() for step in run.steps
            if step.kind == "call" and step.function == "note"]


def test_a_run_says_its_big_locals_are_chunked_and_an_older_run_replays_storing_them_whole(
        tmp_path):
    """Runs recorded before big locals were chunked store them whole; their replay must too, or
    every step's values have other keys than the recording's and each is compared by loading
    it (a replay of such a run took 3.5x as long). The run's entry says which it is."""
    from tests.conftest import PROGRAMS, run_python
    from tests.e2e.replay_helpers import replay_json

    paths = {}
    for whole in ("0", "1"):
        path = paths[whole] = tmp_path / f"rows-{whole}.snap"
        done = run_python(str(PROGRAMS / "growing_rows.py"), str(path), cwd=tmp_path,
                          env={"ROWS_WHOLE": whole})
        assert done.returncode == 0, done.stderr
    fact, chunked_rows = _rows_at_notes(paths["0"])
    assert fact == 1 and _payload_manifests(paths["0"]) > 0
    fact, whole_rows = _rows_at_notes(paths["1"])
    assert fact is None and _payload_manifests(paths["1"]) == 0
    assert chunked_rows == whole_rows and len(whole_rows) == 150
    for path in paths.values():
        _, data = replay_json(path)
        assert data["status"] == "ok", data["message"]


def test_a_replay_stores_big_locals_as_its_recording_did(snap_path, tmp_path):
    """Chunked when the run says so, or when a traced value of it is stored by chunks (the
    first versions that chunked did not say so: a mistune run they recorded took over five
    times as long to replay with the chunks off); whole otherwise."""
    from types import SimpleNamespace

    from snapstate_capture.replay.traced import TracedReplayRecorder
    from snapstate_capture.store.chunk_scan import has_chunked_values

    with snap.record(snap_path, trace="calls", include=[HERE]):
        grow_and_edit(3)
    with snap.record(snap_path, trace="calls", include=[HERE],
                     options=snap.CaptureOptions(chunked_locals=False)):
        grow_and_edit(3)
    with snap.open_timeline(snap_path, trust=True) as timeline:
        chunked_run, whole_run = timeline.runs[-2], timeline.runs[-1]
        assert chunked_run.entry["chunked_locals"] == 1
        assert "chunked_locals" not in whole_run.entry
        assert has_chunked_values(timeline, chunked_run.id)
        assert not has_chunked_values(timeline, whole_run.id)

        def replay_options(run, entry):
            session = SimpleNamespace(scratch=str(tmp_path / "replay.snap"), block=0,
                                      run=SimpleNamespace(entry=entry, id=run.id),
                                      timeline=timeline)
            return TracedReplayRecorder(session, root=None, name="r",
                                        options=snap.CaptureOptions(), trace="calls",
                                        include=(), exclude=()).options

        assert replay_options(chunked_run, chunked_run.entry).chunked_locals
        assert replay_options(chunked_run, {"kind": "script"}).chunked_locals  # no fact: found
        assert not replay_options(whole_run, whole_run.entry).chunked_locals


def racing(n):
    """A dict another thread keeps changing (a key added, the oldest taken out) while this
    frame calls ``peek`` and checkpoints: every capture must pair each key with its value."""
    import threading

    table = {f"k{i}": i for i in range(1000)}
    stop = threading.Event()

    def churn():
        added = 1000
        while not stop.is_set():
            table[f"k{added}"] = added
            del table[f"k{added - 1000}"]
            added += 1

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(n):
            peek()
            snap.checkpoint("turn")
    finally:
        stop.set()
        thread.join()


def test_a_dict_another_thread_changes_is_captured_with_keys_and_values_of_one_moment(
        snap_path):
    """Keys and values were read in two C calls: a thread switch between them paired keys with
    other keys' values. A race, so not every run of the old code failed (two of five here); the
    code now copies the dict in one call, and no interleaving can fail this."""
    import sys

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with snap.record(snap_path, trace="calls", include=[HERE]):
            racing(80)
    finally:
        sys.setswitchinterval(interval)
    with snap.open_timeline(snap_path, trust=True) as timeline:
        tables = [frame.locals["table"].load() for step in timeline.runs[-1].steps
                  if step.kind in ("call", "checkpoint") and step.function in ("peek", "racing")
                  for frame in step.frames if frame.function == "racing"
                  and "table" in frame.locals]
    assert len(tables) >= 80
    for table in tables:
        assert all(value == int(key[1:]) for key, value in table.items())


class Node:
    """Not plain data: marshal refuses it, so a list of them is left to the whole-value path."""


def holds_nodes(seen):
    import weakref

    nodes = [Node() for _ in range(100)]
    seen.append(weakref.ref(nodes[0]))
    peek()  # the catch-up tries the chunked path, which refuses the list
    return len(nodes)


def test_a_refused_big_value_is_let_go_of_when_its_frame_returns(snap_path):
    """The chunked path remembers a value it refused (not to try again while the frame holds
    it); that memory must end with the frame, or the program's objects outlive it (a weakref
    callback runs late, memory grows)."""
    import gc

    seen: list = []
    with snap.record(snap_path, trace="calls", include=[HERE]):
        holds_nodes(seen)
        gc.collect()
        alive = seen[0]() is not None
    assert not alive
