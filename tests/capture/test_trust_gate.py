"""The trust gate: payloads load only from runs that verify under the user's key, or with trust.

The hostile file's payloads create a marker file when unpickled; the reader walked end to end
must never create it.
"""

from __future__ import annotations

import pytest

import snapstate_capture as snap
from snapstate_capture.trust import keys, gate as trust
from tests.hostile import as_stranger, connect, marker_file, rechain


def _walk(timeline):
    """Touch everything a browser would: runs, steps, frames, source, locals, previews."""
    seen = 0
    for run in timeline.runs:
        assert run.status and run.entry is not None
        for step in run.steps:
            for frame in step.frames:
                assert frame.source
                for value in [*frame.locals.values(), *step.extra.values()]:
                    assert value.preview["type"]
                    value.type_name, value.repr, value.is_placeholder, value.has_payload
                    seen += 1
    return seen


def _values_with_payload(timeline):
    return [v for step in timeline.runs[-1].steps for f in step.frames
            for v in [*f.locals.values(), *step.extra.values()] if v.has_payload]


def test_hostile_file_never_unpickles_through_the_reader(tmp_path):
    marker = tmp_path / "pwned"
    path = marker_file(tmp_path / "hostile.snap", marker)
    with snap.open_timeline(path) as timeline:
        assert _walk(timeline) > 5
        values = _values_with_payload(timeline)
        assert any(v.name == "bomb" for v in values)
        for value in values:
            with pytest.raises(snap.UntrustedPayloadError, match="no key"):
                value.load()
    assert not marker.exists()
    # The marker payload is live: trusting the file does run it (so the test can fail).
    with snap.open_timeline(path) as timeline:
        bomb = next(v for v in _values_with_payload(timeline) if v.name == "bomb")
        bomb.load(trust=True)
    assert marker.exists()


def test_hostile_file_signed_by_a_stranger_is_not_trusted(tmp_path):
    marker = tmp_path / "pwned"
    keys.generate_key()  # the stranger's key signs the hostile file...
    path = marker_file(tmp_path / "hostile.snap", marker)
    keys.generate_key(force=True)  # ...and the user has their own
    with snap.open_timeline(path) as timeline:
        for value in _values_with_payload(timeline):
            with pytest.raises(snap.UntrustedPayloadError, match="another key"):
                value.load()
        assert not trust.is_trusted(timeline.runs[-1])
        with pytest.raises(snap.UntrustedPayloadError):
            trust.require_trust(timeline.runs[-1])
    assert not marker.exists()


def test_own_signed_file_loads_without_trust(snap_path):
    keys.generate_key()
    with snap.record(snap_path):
        plan = {"goal": "ship", "steps": [1, 2, 3]}
        snap.checkpoint("planned")
    with snap.open_timeline(snap_path) as timeline:
        run = timeline.runs[-1]
        assert trust.is_trusted(run)
        trust.require_trust(run)  # no error: replay of one's own file needs no --trust
        assert run.steps[0].frames[-1].locals["plan"].load() == plan


def test_own_file_altered_after_signing_is_refused(tmp_path):
    keys.generate_key()
    marker = tmp_path / "pwned"
    path = marker_file(tmp_path / "mine.snap", marker, mine=True)
    conn = connect(path)
    run_id = conn.execute("SELECT id FROM runs").fetchone()[0]
    conn.execute("UPDATE steps SET label='forged' WHERE idx=1")
    conn.close()
    with snap.open_timeline(path) as timeline:
        value = _values_with_payload(timeline)[0]
        with pytest.raises(snap.UntrustedPayloadError, match="altered"):
            value.load()
    rechain(path, run_id)
    with snap.open_timeline(path) as timeline:
        with pytest.raises(snap.UntrustedPayloadError, match="invalid signature"):
            _values_with_payload(timeline)[0].load()
    assert not marker.exists()


def test_trust_flag_on_open_or_load(snap_path):
    with as_stranger(snap_path.parent), snap.record(snap_path):
        numbers = [1, 2, 3]
        snap.checkpoint()
    with snap.open_timeline(snap_path) as timeline:
        value = timeline.runs[-1].steps[0].frames[-1].locals["numbers"]
        with pytest.raises(snap.UntrustedPayloadError, match="no key yet.*pass --trust"):
            value.load()
        assert value.load(trust=True) == numbers
    with snap.open_timeline(snap_path, trust=True) as timeline:
        assert timeline.runs[-1].steps[0].frames[-1].locals["numbers"].load() == numbers


def test_a_value_not_read_from_a_step_is_never_implicitly_trusted(snap_path):
    keys.generate_key()
    with snap.record(snap_path):
        numbers = [1, 2]
        snap.checkpoint()
    with snap.open_timeline(snap_path) as timeline:
        found = timeline.runs[-1].steps[0].frames[-1].locals["numbers"]
        orphan = snap.Value(timeline, "numbers", found.ref)
        with pytest.raises(snap.UntrustedPayloadError, match="not read from a step"):
            orphan.load()
        assert found.load() == numbers
