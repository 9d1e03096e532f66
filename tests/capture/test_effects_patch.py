"""``record(..., patch_nondeterminism=True)`` routes calls of clocks, ``datetime.now``, random,
uuids, urandom, secrets and input through the journal, whoever makes them (the event loop's
and other scheduling reads pass through), and undoes it after the block; every run saves the
random generator's state at its start and its entry."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
import uuid

import snapstate_capture as snap
from snapstate_capture.capture import effects


def _effect_labels(path):
    with snap.open_timeline(path) as timeline:
        return [s.label for s in timeline.runs[-1].steps if s.kind == "effect"]


def test_user_calls_are_routed_and_library_calls_are_not(snap_path):
    original_time = time.time
    with snap.record(snap_path, patch_nondeterminism=True):
        assert time.time is not original_time
        stamp = time.time()
        tick = time.monotonic()
        ident = uuid.uuid4()  # uuid4's own os.urandom call is part of this effect
        noise = os.urandom(3)
        draw = random.random()
        asyncio.run(asyncio.sleep(0))  # the event loop reads time.monotonic: library code
    assert time.time is original_time and uuid.uuid4 is effects._originals["uuid.uuid4"]
    assert isinstance(stamp, float) and tick > 0 and len(noise) == 3 and 0 <= draw < 1
    assert ident.version == 4
    assert _effect_labels(snap_path) == ["time.time", "time.monotonic", "uuid.uuid4",
                                          "os.urandom", "random.random"]


def test_datetime_is_patched_on_the_class_and_put_back(snap_path):
    from datetime import date, datetime  # bound before the block, as frameworks do

    original_now = datetime.__dict__["now"]
    with snap.record(snap_path, patch_nondeterminism=True):
        assert datetime.__dict__["now"] is not original_now
        stamp = datetime.now()
        day = date.today()
        epoch = time.localtime(0)  # given a time: reads no clock, not an effect
    assert datetime.__dict__["now"] is original_now
    assert isinstance(stamp, datetime) and isinstance(day, date) and epoch.tm_year == 1970
    assert _effect_labels(snap_path) == ["datetime.datetime.now", "datetime.date.today"]


def test_uuid7_is_patched_where_python_has_it(snap_path):
    from snapstate_capture.capture import nondeterminism

    with snap.record(snap_path, patch_nondeterminism=True):
        patched = nondeterminism.patched_names()
    assert ("uuid.uuid7" in patched) == hasattr(uuid, "uuid7")
    assert "uuid.uuid1" in patched and "secrets.token_hex" in patched
    assert nondeterminism.patched_names() == []


def test_nested_patching_is_undone_by_the_last_block(snap_path, tmp_path):
    original = time.monotonic
    with snap.record(snap_path, patch_nondeterminism=True):
        with snap.record(tmp_path / "inner.snap", patch_nondeterminism=True):
            pass
        assert time.monotonic is not original
    assert time.monotonic is original


def test_random_state_is_saved_at_run_start(snap_path):
    random.seed(1234)
    expected = random.getstate()
    with snap.record(snap_path):
        random.random()
    with snap.open_timeline(snap_path) as timeline:
        run = timeline.runs[-1]
        saved = json.loads(timeline.blob(run.entry["rng"]["random"]))
    assert (saved["version"], tuple(saved["internal"]), saved["gauss"]) == expected


def test_numpy_state_is_saved_when_numpy_is_imported(snap_path):
    import numpy

    numpy.random.seed(7)
    with snap.record(snap_path):
        pass
    with snap.open_timeline(snap_path) as timeline:
        saved = json.loads(timeline.blob(timeline.runs[-1].entry["rng"]["numpy"]))
    assert saved["keys"] == [int(k) for k in numpy.random.get_state()[1]]


def test_an_effect_that_draws_random_numbers_keeps_the_state_after_it(snap_path):
    @snap.effect(name="sample")
    def sample():
        return random.random()

    with snap.record(snap_path):
        sample()
        after = random.getstate()
    with snap.open_timeline(snap_path) as timeline:
        run = timeline.runs[-1]
        (value,) = timeline.engine.query("SELECT value FROM effects WHERE run_id=?", (run.id,))[0]
        saved = json.loads(timeline.blob(json.loads(value)["r"]))
    assert tuple(saved["internal"]) == after[1]


def test_entry_keeps_chosen_environment_variables_but_no_secrets(snap_path, monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", "17")
    monkeypatch.setenv("MY_API_TOKEN", "hunter2")
    options = snap.CaptureOptions(entry_env=("PYTHONHASHSEED", "MY_API_TOKEN", "UNSET_VAR"))
    with snap.record(snap_path, options=options):
        pass
    with snap.open_timeline(snap_path) as timeline:
        entry = timeline.runs[-1].entry
    assert entry["env"] == {"PYTHONHASHSEED": "17"}
    assert entry["cwd"] == os.getcwd() and entry["block"] >= 0
