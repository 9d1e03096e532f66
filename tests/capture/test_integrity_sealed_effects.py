"""Under encryption an effect's arguments and result are sealed like every other value, its
argument digest is keyed, and a workflow's arguments in the entry are sealed (issue 22, 9)."""

from __future__ import annotations

import snapstate_capture as snap
from snapstate_capture.capture.effects import arguments_digest
from snapstate_capture.store import blobs
from snapstate_capture.trust import keys
from snapstate_capture.store.reader import Value
from tests.hostile import connect

#: Built at run time: the saved source of this file (readable by design) must not hold it.
SECRET = "PROMPT_0a0a_" + "walrus".upper()


@snap.effect(name="ask")
def ask(prompt):
    return {"reply": f"REPLY_TO_{prompt}"}


def _workflow(secret):
    snap.checkpoint("inside")
    return len(secret)


def _everything_stored(path) -> bytes:
    """Every row of the file and every blob's inner bytes, decompressed, as one byte string."""
    conn = connect(path)
    rows = {row[0]: row[1:] for row in conn.execute("SELECT hash, codec, size, data FROM blobs")}
    source = blobs.BlobSource(lambda key: rows.get(key))
    out = [source.inner(key)[1] for key in rows]
    for table in ("runs", "steps", "effects"):
        out.extend(repr(row).encode() for row in conn.execute(f"SELECT * FROM {table}"))
    conn.close()
    return b"\n".join(out)


def test_effect_arguments_and_results_are_sealed(snap_path):
    keys.generate_key()
    with snap.record(snap_path, encrypt=True):
        answer = ask(SECRET)
        snap.checkpoint("asked")
    assert answer["reply"].endswith(SECRET)
    stored = _everything_stored(snap_path)
    assert SECRET.encode() not in stored
    assert arguments_digest({"prompt": SECRET}).encode() not in stored  # keyed, not guessable
    with snap.open_timeline(snap_path) as timeline:  # the owner still reads them
        step = next(s for s in timeline.runs[-1].steps if s.kind == "effect")
        assert SECRET in step.extra["args"].repr and not step.extra["args"].is_sealed
        assert SECRET in step.extra["result"].repr


def test_without_the_key_effect_arguments_are_locked(snap_path, tmp_path, monkeypatch):
    keys.generate_key()
    with snap.record(snap_path, encrypt=True):
        ask(SECRET)
    monkeypatch.setenv("SNAPSTATE_KEY", str(tmp_path / "someone-else.key"))
    keys.generate_key()
    with snap.open_timeline(snap_path) as timeline:
        step = next(s for s in timeline.runs[-1].steps if s.kind == "effect")
        assert step.extra["args"].is_sealed and SECRET not in step.extra["args"].repr


def test_a_workflows_arguments_are_sealed_in_its_entry(snap_path):
    keys.generate_key()
    recorded = snap.record(snap_path, encrypt=True)(_workflow)
    assert recorded(SECRET) == len(SECRET)
    assert SECRET.encode() not in _everything_stored(snap_path)
    with snap.open_timeline(snap_path) as timeline:
        run = timeline.runs[-1]
        assert run.entry.get("kind") == "function" and run.entry["args"].get("x")
        loaded = Value(timeline, "arguments", run.entry["args"]).load(trust=True)  # unsealed
    assert loaded == ((SECRET,), {})
