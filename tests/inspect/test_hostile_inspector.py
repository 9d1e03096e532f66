"""The inspector and ``snapstate diff`` on hostile files: browsing, diffing and comparing never
unpickle anything (DESIGN.md "Trust"), and damaged files never crash the app."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

import snapstate_capture as snap
from snapstate_capture.trust import keys
from snapstate_inspect.app import SnapStateApp
from tests.fuzzing import run_command
from tests.hostile import marker_file

from .conftest import settle

SIZE = (140, 40)
WALK = ["n", "n", "j", "enter", "down", "enter", "v", "x", "greater_than_sign",
        "less_than_sign", "h", "escape", "r", "escape", "m", "n", "n", "d", "escape",
        "question_mark", "escape"]


class Markers:
    """The marker files of both hostile files (their payloads differ, so a full diff would
    have to load them); ``exists()`` when either was created."""

    def __init__(self, *paths):
        self.paths = paths

    def exists(self):
        return any(p.exists() for p in self.paths)


@pytest.fixture
def hostile_pair(tmp_path):
    markers = Markers(tmp_path / "pwned-a", tmp_path / "pwned-b")
    a = marker_file(tmp_path / "a.snap", markers.paths[0], steps=3)
    b = marker_file(tmp_path / "b.snap", markers.paths[1], steps=4)
    return a, b, markers


async def _browse(path, keys_to_press, *, other=None):
    """Browse ``path`` headless pressing ``keys_to_press``. A ``TimelineError`` while opening
    (before the app runs) is a clean refusal — ``snapstate inspect`` prints it as one line;
    any exception while the app runs fails the test."""
    reader = snap.open_timeline(path)
    second = snap.open_timeline(other) if other else None
    try:
        try:
            app = SnapStateApp(reader, other=second) if second else SnapStateApp(reader)
        except snap.TimelineError as exc:
            assert str(path) in str(exc)
            return
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            for key in keys_to_press:
                await pilot.press(key)
                await settle(pilot)
    finally:
        reader.close()
        if second:
            second.close()


async def test_inspector_never_unpickles_a_hostile_file(hostile_pair):
    a, b, marker = hostile_pair
    await _browse(a, WALK)
    assert not marker.exists()


async def test_inspector_comparing_two_hostile_files_never_unpickles(hostile_pair):
    a, b, marker = hostile_pair
    keys.generate_key()  # the user has a key; the files are not signed with it
    await _browse(a, ["n", "n", "equals_sign", "escape", "m", "n", "d", "escape"], other=b)
    assert not marker.exists()


@pytest.mark.parametrize("argv", [
    ["diff", "{a}", "{b}"],
    ["diff", "{a}", "{b}", "--json"],
    ["diff", "{a}", "--step", "0", "{b}", "--step", "2"],
    ["diff", "--steps", "0", "2", "{a}"],
    ["diff", "{a}", "{b}", "--full"],  # refused without --trust
], ids=lambda argv: " ".join(argv))
def test_diff_never_unpickles_a_hostile_file(hostile_pair, argv):
    a, b, marker = hostile_pair
    code, out, err = run_command(*[str(a) if x == "{a}" else str(b) if x == "{b}" else x
                                   for x in argv])
    assert code in (0, 1, 2) and "internal error" not in err
    assert not marker.exists()


def test_diff_full_with_trust_does_unpickle(hostile_pair):
    """The marker payload is live: with --trust, full-value diff really loads it."""
    a, b, marker = hostile_pair
    run_command("diff", str(a), str(b), "--full", "--trust")
    assert marker.exists()


@pytest.mark.parametrize("damage", ["truncate", "label", "frames", "size", "page"])
async def test_inspector_on_damaged_files(hostile_pair, tmp_path, damage):
    """A damaged file: refused in one line by the command, or browsed without a crash."""
    a, _, marker = hostile_pair
    path = tmp_path / f"{damage}.snap"
    shutil.copyfile(a, path)
    if damage in ("truncate", "page"):
        data = bytearray(path.read_bytes())
        if damage == "truncate":
            data = data[: len(data) * 2 // 3]
        else:
            data[4096 * 2:4096 * 3] = b"\xff" * 4096
        path.write_bytes(bytes(data))
    else:
        conn = sqlite3.connect(path, isolation_level=None)
        if damage == "label":
            conn.execute("UPDATE steps SET label=? WHERE idx=1", ("\x1b]0;t\x07[b]x" * 50_000,))
        elif damage == "frames":
            conn.execute("UPDATE steps SET frames='[\"zz\", 7]' WHERE idx=1")
        else:
            conn.execute("UPDATE blobs SET size=? ", (2**62,))
        conn.close()
    try:
        snap.open_timeline(path).close()
    except snap.TimelineError as exc:  # refused on open: `snapstate inspect` prints one line
        assert str(path) in str(exc)
        return
    # Opened: the app must survive browsing it (an exception inside the app fails run_test).
    await _browse(path, ["n", "n", "enter", "greater_than_sign", "less_than_sign"])
    assert not marker.exists()


# -- the inspector on fuzzed files (few examples: each starts the app headless) -----------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.inspect.test_hostile_fuzz import (ABSURD, BLOB_COLUMNS, RUN_COLUMNS,  # noqa: E402
                                             STEP_COLUMNS, _set_column)


@pytest.fixture(scope="module")
def browsable(tmp_path_factory):
    path = tmp_path_factory.mktemp("browse") / "valid.snap"
    with snap.record(path, name="browse"):
        for n in range(4):
            table = {"n": n, "rows": [[i, str(i)] for i in range(4)], "text": "[b]x\x1b[2J"}
            snap.checkpoint("work", n=n)
    assert table
    return path


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from([("runs", c) for c in RUN_COLUMNS]
                              + [("steps", c) for c in STEP_COLUMNS]
                              + [("blobs", c) for c in BLOB_COLUMNS]),
       value=st.sampled_from(range(len(ABSURD))), row=st.integers(0, 50))
def test_inspector_headless_on_fuzzed_rows(browsable, tmp_path, target, value, row):
    import asyncio

    path = tmp_path / "mutant.snap"
    shutil.copyfile(browsable, path)
    _set_column(path, *target, ABSURD[value], row)
    try:
        snap.open_timeline(path).close()
    except snap.TimelineError:
        return  # refused on open, in one line (tests/inspect/test_hostile_fuzz.py)
    asyncio.run(_browse(path, ["n", "enter", "greater_than_sign", "less_than_sign"]))


async def test_inspector_on_a_sample_with_a_flipped_byte(tmp_path):
    """One byte flipped mid-file (a damaged page): the plot, search, history and change search
    run in workers and read the damaged pages; each must say so, not bring the app down."""
    from tests.conftest import ROOT

    path = tmp_path / "flipped.snap"
    data = bytearray((ROOT / "sample_snapshots" / "research_agent.snap").read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    keys = ["greater_than_sign", "tab", "tab", "tab", "h", "q", "v", "V",
            "slash", *"harbour", "enter", "tab", "q", "less_than_sign"]
    await _browse(path, keys)
