"""Signed runs and tamper detection: every step re-signs the run; ``verify`` finds any change."""

from __future__ import annotations

import json
import stat
import textwrap

import pytest

import snapstate_capture as snap
from snapstate_capture.trust import keys
from snapstate_capture.store.step_record import StepRecord
from snapstate_capture.store.writer import TimelineWriter
from snapstate_capture.trust.signing import RunSigner
from snapstate_capture.trust.verify import verify_timeline
from tests.conftest import run_python
from tests.hostile import connect, flip_byte, last_run_id, payload_keys, rechain


def _record(path, steps=4, name="signed"):
    with snap.record(path, name=name):
        data = []
        for i in range(steps):
            data.append({"i": i})
            snap.checkpoint(f"c{i}", i=i)
    return last_run_id(path)


def _report(path, key=None):
    with snap.open_timeline(path) as timeline:
        return verify_timeline(timeline, key if key is not None else keys.find_key())


def _only(report):
    assert len(report.runs) == 1
    return report.runs[0]


def test_runs_are_signed_with_the_user_key(snap_path):
    key = keys.generate_key()
    _record(snap_path)
    conn = connect(snap_path)
    signature, key_id = conn.execute("SELECT signature, key_id FROM runs").fetchone()
    conn.close()
    # the crypto extra is installed (test extra): run tag + Ed25519, which teammates can check
    assert len(signature) == 16 + 64 and key_id == key.key_id
    run = _only(_report(snap_path))
    assert (run.signature, run.steps, run.status) == ("valid", 4, "finished")
    assert run.intact and run.trusted


def test_without_public_keys_runs_are_signed_with_hmac_and_still_verify(snap_path,
                                                                        monkeypatch):
    from snapstate_capture.trust import public_keys

    key = keys.generate_key()
    monkeypatch.setattr(public_keys, "available", lambda: False)  # no cryptography
    _record(snap_path)
    conn = connect(snap_path)
    signature, key_id = conn.execute("SELECT signature, key_id FROM runs").fetchone()
    conn.close()
    assert len(signature) == 48 and key_id == key.key_id  # run tag + HMAC-SHA256
    run = _only(_report(snap_path))
    assert (run.signature, run.public) == ("valid", False) and run.trusted


def test_first_record_creates_the_key_owner_only_and_signs(snap_path, isolated_user_config):
    _record(snap_path)
    key_file = isolated_user_config / "snapstate" / "key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    run = _only(_report(snap_path))
    assert run.signature == "valid" and run.key_id == keys.load_key().key_id and run.trusted
    _record(snap_path)  # the second record uses the same key
    assert {r.signature for r in _report(snap_path).runs} == {"valid"}


def test_snapstate_key_wins_over_the_default_place(snap_path, isolated_user_config,
                                                  monkeypatch, tmp_path):
    monkeypatch.setenv("SNAPSTATE_KEY", str(tmp_path / "elsewhere" / "my.key"))
    _record(snap_path)
    assert (tmp_path / "elsewhere" / "my.key").exists()
    assert not (isolated_user_config / "snapstate" / "key").exists()
    assert _only(_report(snap_path)).signature == "valid"


def test_where_no_key_can_be_made_runs_are_unsigned_with_one_warning(
        snap_path, no_key_can_be_made, capsys):
    _record(snap_path)
    _record(snap_path)
    err = capsys.readouterr().err
    assert err.count("runs are recorded unsigned") == 1 and "SNAPSTATE_KEY" in err
    reports = _report(snap_path).runs
    assert [r.signature for r in reports] == ["unsigned", "unsigned"]
    assert all(r.intact and not r.trusted for r in reports)


def test_a_key_made_later_cannot_vouch_for_an_older_run(snap_path, no_key_can_be_made,
                                                        monkeypatch, tmp_path):
    _record(snap_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "writable"))
    keys.generate_key()
    assert _only(_report(snap_path)).signature == "unsigned"


def test_other_key_and_no_key(snap_path):
    old = keys.generate_key()
    _record(snap_path)
    keys.generate_key(force=True)
    assert _only(_report(snap_path)).signature == "other-key"
    assert _only(_report(snap_path, key=old)).signature == "valid"
    with snap.open_timeline(snap_path) as timeline:
        assert verify_timeline(timeline, None).runs[0].signature == "no-key"


def test_a_killed_recorder_leaves_a_run_signed_up_to_its_last_step(tmp_path):
    key = keys.generate_key()
    path = tmp_path / "killed.snap"
    script = textwrap.dedent(f"""
        import os
        import snapstate_capture as snap
        with snap.record({str(path)!r}, name="doomed"):
            for i in range(5):
                value = i * i
                snap.checkpoint("tick", i=i)
            os._exit(9)
        """)
    result = run_python("-c", script)
    assert result.returncode == 9, result.stderr
    run = _only(_report(path, key))
    assert (run.status, run.steps, run.signature) == ("crashed", 5, "valid")
    assert run.trusted


def _edit(path, sql, params=()):
    conn = connect(path)
    conn.execute(sql, params)
    conn.close()


def test_an_edited_step_breaks_the_chain_at_that_step(snap_path):
    keys.generate_key()
    run_id = _record(snap_path, steps=6)
    _edit(snap_path, "UPDATE steps SET label='forged' WHERE run_id=? AND idx=3", (run_id,))
    run = _only(_report(snap_path))
    assert run.chain_broken_at == 3 and "altered" in run.chain_problem
    assert not run.intact and not run.trusted


@pytest.mark.parametrize("change", ["step", "entry", "status", "truncate", "name"])
def test_consistent_forgeries_without_the_key_invalidate_the_signature(snap_path, change):
    keys.generate_key()
    run_id = _record(snap_path, steps=5)
    if change == "step":
        _edit(snap_path, "UPDATE steps SET label='forged' WHERE idx=2")
    elif change == "entry":
        _edit(snap_path, "UPDATE runs SET entry=?", (json.dumps({"kind": "script",
                                                                   "path": "/tmp/evil.py"}),))
    elif change == "status":
        _edit(snap_path, "UPDATE runs SET status='failed'")
    elif change == "truncate":
        _edit(snap_path, "DELETE FROM steps WHERE idx=4")
    elif change == "name":
        _edit(snap_path, "UPDATE runs SET name='someone else'")
    rechain(snap_path, run_id)
    run = _only(_report(snap_path))
    assert run.chain_broken_at is None and run.chain_problem is None
    assert run.signature == "invalid" and not run.intact and not run.trusted


def test_missing_step_and_head_mismatch_are_reported(snap_path):
    run_id = _record(snap_path, steps=5)
    _edit(snap_path, "DELETE FROM steps WHERE run_id=? AND idx=2", (run_id,))
    run = _only(_report(snap_path))
    assert run.chain_broken_at == 2 and "missing" in run.chain_problem
    _edit(snap_path, "DELETE FROM steps WHERE run_id=? AND idx>2", (run_id,))
    run = _only(_report(snap_path))
    assert run.chain_broken_at == 2 and run.chain_problem == "steps 2-4 are missing"


def test_flipped_payload_byte_names_every_step_using_it(snap_path):
    _record(snap_path, steps=5)
    # `data` is a list that changes each step; the `i`-extras are small ints. Take a payload
    # used at exactly one step and one shared by every step.
    key = payload_keys(snap_path)[0]
    flip_byte(snap_path, key)
    report = _report(snap_path)
    run = _only(report)
    assert report.bad_blobs == {key.hex(): "corrupt (hash mismatch)"}
    problem = run.corrupt[key.hex()]
    assert problem.kind == "payload" and problem.problem == "corrupt (hash mismatch)"
    assert problem.steps and problem.steps == sorted(problem.steps)
    # The reader agrees: those steps' values with that payload fail their hash check on read.
    with snap.open_timeline(snap_path) as timeline:
        for index in problem.steps:
            frame = timeline.runs[0].steps[index].frames[-1]
            assert any(v.payload_key == key.hex() for v in frame.locals.values())
    assert not run.intact


def test_missing_blob_is_reported_with_its_steps(snap_path):
    _record(snap_path, steps=3)
    key = payload_keys(snap_path)[0]
    _edit(snap_path, "DELETE FROM blobs WHERE hash=?", (key,))
    problem = _only(_report(snap_path)).corrupt[key.hex()]
    assert problem.problem == "missing" and problem.steps


def test_effect_journal_is_covered_and_rolled_back_changes_do_not_advance_signer(tmp_path):
    key = keys.generate_key()
    path = tmp_path / "effects.snap"
    writer = TimelineWriter(path, signer=RunSigner(key))
    run_id = writer.begin_run(name="fx", entry={"kind": "unknown"}, env={})
    record = StepRecord(kind="effect", label="llm", wall=1.5, mono=2.5, thread="MainThread",
                        task=None, function="f", filename="f.py", lineno=1, depth=0, frames=[])
    writer.append_step(run_id, record)
    row = {"seq": 0, "step": 0, "site": "f.py:1", "ordinal": 0, "name": "llm",
           "outcome": "return", "value": {"p": "00" * 16}}
    writer.add_effect(run_id, row, {})
    with pytest.raises(Exception):
        writer.add_effect(run_id, {**row, "seq": 5, "name": None}, {})  # NOT NULL: rolled back
    writer.add_effect(run_id, {**row, "seq": 1}, {})
    writer.end_run(run_id, "finished")
    writer.close()
    assert _only(_report(path, key)).signature == "valid"
    _edit(path, "UPDATE effects SET value=? WHERE seq=1", (json.dumps({"p": "11" * 16}),))
    assert _only(_report(path, key)).signature == "invalid"


def _traced(x):
    y = x + 1
    snap.checkpoint("mid", y=y)
    return y


def test_traced_runs_are_signed_across_chunks_and_checkpoints(snap_path):
    key = keys.generate_key()
    with snap.record(snap_path, trace="lines", include=[__file__]):
        total = sum(_traced(i) for i in range(3))
    assert total == 6
    conn = connect(snap_path)
    chunks = conn.execute("SELECT first, count FROM trace_chunks").fetchall()
    rows = conn.execute("SELECT idx FROM steps").fetchall()
    conn.close()
    assert chunks and rows  # both kinds of step storage are covered
    run = _only(_report(snap_path, key))
    assert run.signature == "valid" and run.intact and run.steps > len(rows)
    first = chunks[-1][0]
    _edit(snap_path, "UPDATE trace_chunks SET data=substr(data, 1, length(data) - 1) WHERE first=?", (first,))
    run = _only(_report(snap_path, key))
    assert run.chain_broken_at == first and "trace chunk" in run.chain_problem


@pytest.mark.parametrize("public", [True, False])
def test_the_signer_s_cached_signature_is_the_careful_one(public):
    """``RunSigner.sign`` makes the run tag, subkeys and statement once per run, not once per
    change: its bytes are still exactly those of ``sign_state_public``/``sign_state`` (both
    deterministic), for sealed and version-1 runs, run after run, with or without the
    statement handed in; and the writer's seal is ``seal_of``'s."""
    from snapstate_capture.store import sealing
    from snapstate_capture.store.hashing import content_hash
    from snapstate_capture.trust.signing import sign_state, sign_state_public

    key = keys.generate_key()
    signer = RunSigner(key, public=public)
    for run in ("a" * 32, "b" * 32, "a" * 32):
        for version in (2, 1):
            state = sealing.RunState(run, content_hash(run.encode()), key_id=key.key_id,
                                     seq=3, version=version)
            for steps in range(3):
                state = state.with_steps(steps, content_hash(bytes([steps])))
                careful = (sign_state_public(key, state) if public and version >= 2
                           else sign_state(key, state))
                assert signer.sign(state) == careful
                assert signer.sign(state, sealing.run_statement(state)) == careful
                assert sealing.seal_of(state, sealing.run_statement(state)) == \
                    sealing.seal_of(state)


def test_the_writer_stores_the_careful_seal_and_signature(tmp_path):
    """What the writer stores for a run after each step is ``seal_of`` and the signer's
    ``sign_state_public`` of the run's state (the statement made once for both)."""
    from snapstate_capture.store import sealing
    from snapstate_capture.trust.signing import sign_state_public

    key = keys.generate_key()
    writer = TimelineWriter(tmp_path / "s.snap", signer=RunSigner(key, public=True))
    run = writer.begin_run(name="s", entry={}, env={})
    for i in range(3):
        writer.append_step(run, StepRecord(kind="checkpoint", label=f"c{i}", wall=1.0 + i,
                                           mono=2.0 + i, thread="t", task=None, function=None,
                                           filename=None, lineno=None, depth=0, frames=[]))
        state = writer._states[run]
        seal, signature = writer.engine.query("SELECT seal, signature FROM runs WHERE id=?",
                                              (run,))[0]
        assert bytes(seal) == sealing.seal_of(state)
        assert bytes(signature) == sign_state_public(key, state)
    writer.close()
