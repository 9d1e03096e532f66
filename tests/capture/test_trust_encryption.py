"""Encryption at rest: ``record(..., encrypt=True)`` seals previews and payloads (AES-GCM).

Without the key the file still lists runs and steps; values show as locked. Sealing is
deterministic, so dedup and content addressing still work.
"""

from __future__ import annotations

import pytest

import snapstate_capture as snap
from snapstate_capture.trust import keys
from snapstate_capture.trust.encryption import MAGIC, LockedError, Sealer, open_envelope
from snapstate_capture.trust.verify import verify_timeline
from tests.conftest import run_cli
from tests.hostile import connect

SECRET_TEXT = "the launch code is 0000-WALRUS"


def _record_encrypted(path):
    with snap.record(path, name="sealed", encrypt=True):
        note = SECRET_TEXT
        unchanged = list(range(100))
        for i in range(3):
            snap.checkpoint(f"c{i}", i=i)
    assert note and unchanged


def _locals(path, step=0):
    with snap.open_timeline(path) as timeline:
        frame = timeline.runs[-1].steps[step].frames[-1]
        return {name: (v.repr, v.is_sealed, v.preview) for name, v in frame.locals.items()}


def test_plaintext_never_reaches_the_file(snap_path):
    keys.generate_key()
    _record_encrypted(snap_path)
    raw = snap_path.read_bytes()
    assert SECRET_TEXT.encode() not in raw
    conn = connect(snap_path)
    for (data,) in conn.execute("SELECT data FROM blobs"):
        assert b"WALRUS" not in data
    conn.close()


def test_owner_reads_and_loads_encrypted_values(snap_path):
    keys.generate_key()
    _record_encrypted(snap_path)
    values = _locals(snap_path)
    assert values["note"][0] == repr(SECRET_TEXT) and not values["note"][1]
    with snap.open_timeline(snap_path) as timeline:
        step = timeline.runs[-1].steps[1]
        assert step.frames[-1].locals["note"].load() == SECRET_TEXT  # signed + decrypted
        assert step.extra["i"].repr == "1"
        report = verify_timeline(timeline, keys.find_key())
        assert report.intact and report.runs[0].signature == "valid"


def test_without_the_key_runs_and_steps_list_and_values_are_locked(snap_path):
    keys.generate_key()
    _record_encrypted(snap_path)
    keys.key_path().unlink()
    with snap.open_timeline(snap_path) as timeline:
        run = timeline.runs[-1]
        assert (run.name, run.status, len(run.steps)) == ("sealed", "finished", 3)
        step = run.steps[2]
        assert (step.kind, step.label) == ("checkpoint", "c2")
        frame = step.frames[-1]
        assert set(frame.locals) >= {"note", "unchanged", "i"}  # names stay readable
        note = frame.locals["note"]
        assert note.is_sealed and "locked" in note.repr and "no key" in note.repr
        assert SECRET_TEXT not in str(note.preview)
        with pytest.raises(snap.SnapStateError, match="locked"):
            note.load(trust=True)
        # Hashes are over the stored envelopes: verify works without the key.
        report = verify_timeline(timeline, None)
        assert report.intact and report.runs[0].signature == "no-key"
    shown = run_cli("show", str(snap_path))
    assert shown.returncode == 0, shown.stderr
    assert "locked" in shown.stdout and "WALRUS" not in shown.stdout


def test_another_key_cannot_open_values(snap_path):
    keys.generate_key()
    _record_encrypted(snap_path)
    keys.generate_key(force=True)
    note = _locals(snap_path)["note"]
    assert note[1] and "another key" in note[0]


def test_sealing_is_deterministic_so_unchanged_values_are_stored_once(snap_path):
    keys.generate_key()
    _record_encrypted(snap_path)
    with snap.open_timeline(snap_path) as timeline:
        steps = timeline.runs[-1].steps
        refs = [steps[i].frames[-1].locals["unchanged"].ref for i in range(3)]
    assert refs[0] == refs[1] == refs[2] and refs[0]["x"] == keys.find_key().key_id
    conn = connect(snap_path)
    envelopes = [d for (d,) in conn.execute("SELECT data FROM blobs") if d[:4] == MAGIC]
    conn.close()
    assert envelopes and len(envelopes) == len(set(envelopes))


def test_envelope_tampering_and_wrong_key_are_detected():
    key = keys.UserKey(b"k" * 32)
    sealer = Sealer(key)
    envelope = sealer.seal(b"x" * 1000)
    assert open_envelope(key, envelope) == b"x" * 1000
    assert sealer.seal(b"x" * 1000) == envelope
    broken = bytearray(envelope)
    broken[-1] ^= 1
    with pytest.raises(LockedError, match="does not decrypt"):
        open_envelope(key, bytes(broken))
    with pytest.raises(LockedError, match="not yours"):
        open_envelope(keys.UserKey(b"o" * 32), envelope)


def test_encrypt_without_a_key_records_nothing_in_the_clear(snap_path, capsys,
                                                           no_key_can_be_made):
    with snap.record(snap_path, encrypt=True) as block:
        secret_plan = SECRET_TEXT
        assert snap.checkpoint() is None
    assert secret_plan and block.run_id is None
    assert "SNAPSTATE_KEY" in capsys.readouterr().err
    assert not snap_path.exists()


def test_without_the_cryptography_package(snap_path):
    keys.generate_key()
    _record_encrypted(snap_path)
    block = f"""
import sys
sys.modules["cryptography"] = None  # as if `snapstate[crypto]` were not installed
import snapstate_capture as snap
with snap.open_timeline({str(snap_path)!r}) as timeline:
    print(timeline.runs[-1].steps[0].frames[-1].locals["note"].repr)
with snap.record({str(snap_path) + "2"!r}, encrypt=True):
    snap.checkpoint()
"""
    from tests.conftest import run_python

    result = run_python("-c", block)
    assert result.returncode == 0, result.stderr
    assert "cryptography not installed" in result.stdout
    assert "snapstate[crypto]" in result.stderr
    assert not (snap_path.parent / (snap_path.name + "2")).exists()
