"""Team signatures in one process, two users' keys: a teammate's HMAC-signed run is refused
with words that hold (its owner signs it for the team, then it is trusted by public key);
an altered teammate's run is refused even when trusted; signing stays valid for its author."""

from __future__ import annotations

import sqlite3

import pytest

import snapstate_capture as snap
from snapstate_capture.errors import UntrustedPayloadError
from snapstate_capture.trust import keys, public_keys
from snapstate_capture.trust.gate import require_trust
from snapstate_capture.trust.sign_runs import sign_run
from snapstate_capture.trust.trusted import add_trusted
from snapstate_capture.trust.verify import verify_timeline


def _as(monkeypatch, tmp_path, who: str) -> keys.UserKey:
    monkeypatch.setenv(keys.KEY_ENV, str(tmp_path / who / "key"))
    found = keys.find_key()
    return found if found is not None else keys.generate_key()


def _record(path, name):
    with snap.record(path, name=name):
        memory = {"facts": ["a", "b"]}
        snap.checkpoint("learned")
    assert memory


def test_an_hmac_signed_teammate_run_is_signed_for_the_team_by_its_owner(tmp_path, monkeypatch):
    path = tmp_path / "shared.snap"
    bo = _as(monkeypatch, tmp_path, "bo")
    installed = public_keys.available
    monkeypatch.setattr(public_keys, "available", lambda: False)  # bo: no crypto extra
    _record(path, "bo-run")
    monkeypatch.setattr(public_keys, "available", installed)
    ana = _as(monkeypatch, tmp_path, "ana")
    with snap.open_timeline(path) as timeline:
        run = timeline.run()
        assert len(run.signature) == 48
        with pytest.raises(UntrustedPayloadError) as refused:
            require_trust(run)
    words = str(refused.value)
    assert f"signed by another key ({bo.key_id}; yours is {ana.key_id}) with HMAC" in words
    assert "only its owner can check" in words and f"--run {run.id[:8]}" in words
    assert "`snapstate sign" in words and "snapstate trust add NAME KEY" in words

    # what the message says works: bo signs it for the team, ana trusts bo's exported key
    _as(monkeypatch, tmp_path, "bo")
    with snap.open_timeline(path) as timeline:
        result = sign_run(timeline, timeline.run(), bo)
    assert not result.already
    exported = public_keys.export_text(bo)
    with snap.open_timeline(path) as timeline:  # still valid for bo, now in the public form
        report = verify_timeline(timeline, bo).runs[0]
        assert (report.signature, report.public) == ("valid", True)
    _as(monkeypatch, tmp_path, "ana")
    add_trusted("bo", exported)
    with snap.open_timeline(path) as timeline:
        run = timeline.run()
        require_trust(run)  # no exception: trusted
        report = verify_timeline(timeline, ana).runs[0]
        assert (report.signature, report.signer, report.trusted) == ("trusted", "bo", True)
        value = run.steps[-1].frames[-1].locals["memory"]
        assert value.load() == {"facts": ["a", "b"]}


def test_a_trusted_teammates_altered_run_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "shared.snap"
    bo = _as(monkeypatch, tmp_path, "bo")
    _record(path, "bo-run")
    exported = public_keys.export_text(bo)
    _as(monkeypatch, tmp_path, "ana")
    add_trusted("bo", exported)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE runs SET name = 'renamed'")  # altered after bo signed it
    conn.commit()
    conn.close()
    with snap.open_timeline(path) as timeline:
        report = verify_timeline(timeline, keys.find_key()).runs[0]
        assert not report.trusted and report.signer is None
        with pytest.raises(UntrustedPayloadError, match="altered"):
            require_trust(timeline.run())
