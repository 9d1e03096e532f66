"""What a process keeps between recordings, so that recording again and again (``pytest
--snapstate``: a run per test) does not redo it — and the cases where it must be redone."""

from __future__ import annotations

import os
import random
import time

from snapstate_capture import record
from snapstate_capture.options import ValueOptions
from snapstate_capture.tracing import codeinfo
from snapstate_capture.tracing.include import IncludeRule
from snapstate_capture.capture import rng
from snapstate_capture.trust import keys


def test_a_key_rewritten_in_place_is_read_again(isolated_user_config):
    first = keys.generate_key()
    assert keys.load_key().secret == first.secret
    path = keys.key_path()
    other = os.urandom(len(first.secret))
    # Same file, same size, written right after the read: its times may not have moved.
    with open(path, "r+b") as handle:
        handle.write(f"{keys._HEADER} {other.hex()}\n".encode("ascii"))
    assert keys.load_key().secret == other


def test_a_key_file_made_loose_is_refused_even_after_it_was_read(isolated_user_config):
    keys.generate_key()
    keys.load_key()
    os.chmod(keys.key_path(), 0o644)
    try:
        keys.load_key()
    except keys.KeyFileError as exc:
        assert "accessible by others" in str(exc)
    else:
        raise AssertionError("a loose key file was used")


def test_an_unchanged_key_file_is_not_read_again(isolated_user_config, monkeypatch):
    keys.generate_key()
    path = keys.key_path()
    old = time.time() - 60  # well past the racy window
    os.utime(path, (old, old))
    first = keys.load_key()
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    assert keys.load_key().secret == first.secret
    assert str(path) not in [str(p) for p in opened]


def test_generator_states_are_saved_again_only_after_a_draw():
    program_state = random.getstate()
    try:
        _saved_again_only_after_a_draw()
    finally:
        random.setstate(program_state)  # the suite's other tests draw on as before


def _saved_again_only_after_a_draw():
    random.seed(5)
    first = rng.save_states()["random"]
    assert rng.save_states()["random"] == first
    random.random()
    drawn = rng.save_states()["random"]
    assert drawn != first
    random.seed(5)  # back to the first state: the first blob, byte for byte
    assert rng.save_states()["random"] == first
    random.setstate((3, tuple([1] * 624 + [624]), None))
    assert rng.save_states()["random"][1] == rng.canonical_json(rng._random_state(random.getstate()))


def test_rules_with_the_same_globs_share_their_decisions(tmp_path):
    inside = str(tmp_path / "agent.py")
    first = IncludeRule(cwd=str(tmp_path))
    assert first.includes(inside)
    second = IncludeRule(cwd=str(tmp_path))
    assert second._cache is first._cache and inside in second._cache
    other = IncludeRule(exclude=["agent.py"], cwd=str(tmp_path))
    assert other._cache is not first._cache
    assert not other.includes(inside)
    elsewhere = IncludeRule(cwd=str(tmp_path / "sub"))
    assert not elsewhere.includes(inside)  # outside its directory: decided for itself


def _work(password, n):
    total = n + 1
    return total


def test_code_is_analysed_once_per_options_across_recordings(tmp_path, monkeypatch):
    plain, secretive = ValueOptions(), ValueOptions(secret_patterns=("total",))
    analysed = []
    real = codeinfo._analyse
    monkeypatch.setattr(codeinfo, "_ANALYSED", {})
    monkeypatch.setattr(codeinfo, "_analyse",
                        lambda code, values: analysed.append(code) or real(code, values))
    for index in range(2):
        with record(tmp_path / f"r{index}.snap", trace="calls"):
            _work("hunter2", index)
    assert analysed.count(_work.__code__) == 1  # by the first recording, not the second
    info = codeinfo.analyse(_work.__code__, plain)
    assert analysed.count(_work.__code__) == 1
    assert "password" in info.secret and "total" not in info.secret
    other = codeinfo.analyse(_work.__code__, secretive)
    assert "total" in other.secret  # other options: another analysis
    assert analysed.count(_work.__code__) == 2
