"""Everything a reader shows is sealed: step columns, run order, metadata and the effect journal
of signed and unsigned runs alike; a signed run stays "signed by you, altered" whatever of its
record is edited — key id and signature included (issue 22, points 4, 5 and 10)."""

from __future__ import annotations

import json

import pytest

import snapstate_capture as snap
from snapstate_capture.store.sqlite.schema import FORMAT_VERSION
from snapstate_capture.trust import keys
from snapstate_capture.trust.verify import verify_timeline
from tests.conftest import run_cli
from tests.hostile import connect, downgrade_to_format3, last_run_id, reseal


@snap.effect(name="fetch")
def fetch(n):
    return {"n": n, "reply": f"answer {n}"}


def _record(path, name="sealed", steps=4):
    with snap.record(path, name=name):
        total = 0
        for i in range(steps):
            total += fetch(i)["n"]
            snap.checkpoint(f"c{i}", i=i)
    return last_run_id(path)


def _runs(path, key=None):
    with snap.open_timeline(path) as timeline:
        return verify_timeline(timeline, key if key is not None else keys.find_key()).runs


def _edit(path, sql, params=()):
    conn = connect(path)
    conn.execute(sql, params)
    conn.close()


STEP_EDITS = {
    "function": "UPDATE steps SET function='transfer_funds' WHERE idx=3",
    "filename": "UPDATE steps SET filename='/etc/evil.py' WHERE idx=3",
    "lineno": "UPDATE steps SET lineno=999 WHERE idx=3",
    "depth": "UPDATE steps SET depth=depth+1 WHERE idx=3",
    "n_changed": "UPDATE steps SET n_changed=n_changed+7 WHERE idx=3",
}


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
@pytest.mark.parametrize("column", sorted(STEP_EDITS))
def test_every_step_column_a_reader_shows_is_in_the_chain(snap_path, column, signed, request):
    key = keys.generate_key() if signed else request.getfixturevalue("no_key_can_be_made")
    key = key if signed else None
    _record(snap_path)
    _edit(snap_path, STEP_EDITS[column])
    run = _runs(snap_path, key)[0]
    assert run.chain_broken_at == 3 and "altered" in run.chain_problem
    assert not run.intact and not run.trusted
    done = run_cli("verify", str(snap_path))
    assert done.returncode == 1 and "FAILED" in done.stdout


METADATA_EDITS = {
    "name": "UPDATE runs SET name='someone else'",
    "status": "UPDATE runs SET status='failed'",
    "entry": "UPDATE runs SET entry='{\"kind\": \"script\", \"path\": \"/tmp/evil.py\"}'",
    "ended": "UPDATE runs SET ended=ended+60",
    "pid": "UPDATE runs SET pid=pid+1",
    "error": "UPDATE runs SET error='{\"type\": \"Boom\"}'",
    "seq": "UPDATE runs SET seq=seq+10",
    "effect swap": "UPDATE effects SET value=(SELECT value FROM effects e2 WHERE e2.seq=1)"
                   " WHERE seq=0",
    "effect site": "UPDATE effects SET site='elsewhere /x.py:1' WHERE seq=2",
}


@pytest.mark.parametrize("edit", sorted(METADATA_EDITS))
def test_unsigned_runs_are_sealed_too(snap_path, edit, no_key_can_be_made):
    _record(snap_path)
    assert _runs(snap_path, None)[0].intact
    _edit(snap_path, METADATA_EDITS[edit])
    run = _runs(snap_path, None)[0]
    assert run.signature == "unsigned"
    assert not run.intact and "does not match its seal" in run.chain_problem


@pytest.mark.parametrize("edit", sorted(METADATA_EDITS))
def test_signed_runs_cover_their_whole_record(snap_path, edit):
    key = keys.generate_key()
    _record(snap_path)
    _edit(snap_path, METADATA_EDITS[edit])
    run = _runs(snap_path, key)[0]
    assert not run.intact and not run.trusted
    # The place in the file is sealed, not signed: a run moved to another store keeps its
    # signature there (push/pull re-seal it); every other field is signed.
    assert run.signature == ("valid" if edit == "seq" else "invalid")


def test_run_order_is_sealed(snap_path, no_key_can_be_made):
    _record(snap_path, name="first")
    _record(snap_path, name="second")
    conn = connect(snap_path)
    conn.execute("UPDATE runs SET seq=CASE seq WHEN 1 THEN 2 ELSE 1 END")  # swap: "last" changes
    conn.close()
    assert [r.intact for r in _runs(snap_path, None)] == [False, False]


DOWNGRADES = {
    "key id of another": "UPDATE runs SET key_id='00000000000000000000000000000000'",
    "signature removed": "UPDATE runs SET signature=NULL",
    "key id removed": "UPDATE runs SET key_id=NULL",
    "both removed": "UPDATE runs SET signature=NULL, key_id=NULL",
}


@pytest.mark.parametrize("downgrade", sorted(DOWNGRADES))
@pytest.mark.parametrize("also", ["nothing else", "name, status and journal too"])
def test_a_signature_cannot_be_downgraded(snap_path, downgrade, also):
    key = keys.generate_key()
    _record(snap_path)
    if also != "nothing else":
        _edit(snap_path, "UPDATE runs SET name='forged', status='failed'")
        _edit(snap_path, METADATA_EDITS["effect swap"])
    _edit(snap_path, DOWNGRADES[downgrade])
    run = _runs(snap_path, key)[0]
    assert not run.intact and not run.trusted
    if downgrade != "both removed":
        assert run.signature == "invalid"
    done = run_cli("verify", str(snap_path))
    assert done.returncode == 1 and "ok: nothing altered" not in done.stdout


def test_a_relabelled_run_of_ours_stays_ours_even_resealed(snap_path):
    key = keys.generate_key()
    run_id = _record(snap_path)
    _edit(snap_path, DOWNGRADES["key id of another"])
    reseal(snap_path, run_id)  # the attacker recomputes the unkeyed seal as well
    run = _runs(snap_path, key)[0]
    assert run.chain_problem is None  # consistent, as far as anyone without the key can tell
    assert run.signature == "invalid"
    shown = run_cli("verify", str(snap_path))
    assert shown.returncode == 1


def test_a_consistent_forgery_without_the_key_is_invalid_but_an_unsigned_one_is_not(
        snap_path, no_key_can_be_made):
    run_id = _record(snap_path)
    _edit(snap_path, "UPDATE runs SET name='renamed'")
    reseal(snap_path, run_id)
    assert _runs(snap_path, None)[0].intact  # documented: an unkeyed seal proves no origin


def test_a_format_3_file_is_read_verified_and_upgraded(tmp_path):
    key = keys.generate_key()
    path = tmp_path / "old.snap"
    _record(path, name="old")
    downgrade_to_format3(path, key)
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    conn.close()
    old = _runs(path, key)[0]
    assert old.intact and old.signature == "valid"
    _record(path, name="new")
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT_VERSION  # upgraded
    seals = [row[0] for row in conn.execute("SELECT seal FROM runs ORDER BY seq")]
    conn.close()
    assert seals[0] is None and isinstance(seals[1], bytes)
    assert [(r.name, r.intact, r.signature) for r in _runs(path, key)] == \
        [("old", True, "valid"), ("new", True, "valid")]
    _edit(path, "UPDATE steps SET function='forged' WHERE idx=3")  # both runs' step 3
    assert [r.chain_broken_at for r in _runs(path, key)] == [None, 3]  # format 3: not chained
    _edit(path, "UPDATE runs SET seal=NULL")  # the new run cannot pass for an old one
    assert not _runs(path, key)[1].intact


def test_sign_seals_the_key_id_it_adds(snap_path, no_key_can_be_made, monkeypatch, tmp_path):
    _record(snap_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    signed = run_cli("sign", str(snap_path))
    assert signed.returncode == 0, signed.stderr
    key = keys.find_key()
    run = _runs(snap_path, key)[0]
    assert run.signature == "valid" and run.intact
    _edit(snap_path, DOWNGRADES["signature removed"])
    assert _runs(snap_path, key)[0].signature == "invalid"


def test_json_report_says_so(snap_path):
    key = keys.generate_key()
    _record(snap_path)
    _edit(snap_path, DOWNGRADES["signature removed"])
    done = run_cli("verify", str(snap_path), "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["runs"][0]["signature"] == "invalid"
    assert report["key_id"] == key.key_id
