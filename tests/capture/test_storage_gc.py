"""``snapstate gc``: whole runs go, unreferenced blobs go, the file shrinks — and a kept fork
never loses anything it needs, even when its parent run is removed."""

from __future__ import annotations

import json
import os

import pytest

import snapstate_capture as snap
from snapstate_capture.errors import TimelineError
from snapstate_capture.replay.fork import start_fork
from snapstate_capture.store.writer import TimelineWriter
from snapstate_capture.store.maintenance import collect_garbage, parse_duration, parse_size
from tests.conftest import run_cli


def _record(path, name, steps=12, size=300):
    items = [{"n": i, "text": os.urandom(60).hex()} for i in range(size)]
    with snap.record(path, name=name) as block:
        for i in range(steps):
            items.append({"n": size + i, "text": os.urandom(4000).hex()})
            snap.checkpoint("tick", i=i)
    return block.run_id


def _loaded(value):
    """What loading a payload gives, comparably: data as is, other objects by type name."""
    if not value.has_payload:
        return None
    obj = value.load(trust=True)
    return obj if isinstance(obj, (list, dict, int, str, float)) else type(obj).__name__


def _snapshot(run):
    """Everything a reader sees of a run: frames, sources, previews, loaded payloads."""
    out = []
    for step in run.steps:
        frames = [(f.function, f.lineno, f.source[f.lineno - 1] if f.source else None,
                   {n: (v.preview, v.digest, _loaded(v)) for n, v in f.locals.items()})
                  for f in step.frames]
        out.append((step.index, step.kind, step.label, frames,
                    {n: v.preview for n, v in step.extra.items()}))
    return out


def test_gc_never_breaks_a_kept_fork(tmp_path):
    path = tmp_path / "forks.snap"
    parent_id = _record(path, "parent")
    with snap.open_timeline(path) as timeline:
        writer = TimelineWriter(path)
        fork_id = start_fork(writer, timeline.run(parent_id), 7)
        writer.end_run(fork_id, "finished")
        writer.close()
    _record(path, "newest")
    with snap.open_timeline(path, trust=True) as timeline:
        before = _snapshot(timeline.run(fork_id))
    report = collect_garbage(path, keep_runs=2)
    assert [r[0] for r in report.removed_runs] == [parent_id]
    assert report.removed_blobs > 0 and report.size_after < report.size_before
    with snap.open_timeline(path, trust=True) as timeline:
        assert [r.id for r in timeline.runs] == [fork_id, timeline.runs[-1].id]
        assert _snapshot(timeline.run(fork_id)) == before
    verify = run_cli("verify", str(path))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_dry_run_changes_nothing_and_older_than_picks_old_runs(tmp_path):
    path = tmp_path / "old.snap"
    _record(path, "first")
    _record(path, "second")
    size = os.path.getsize(path)
    before = path.read_bytes()
    dry = collect_garbage(path, older_than=0.0, dry_run=True)
    assert [r[1] for r in dry.removed_runs] == ["first", "second"]
    assert dry.size_after is None and os.path.getsize(path) == size
    assert path.read_bytes() == before  # not a byte: opening to write would switch it to WAL
    assert collect_garbage(path, older_than=3600).removed_runs == []
    with snap.open_timeline(path) as timeline:
        assert len(timeline.runs) == 2


def test_max_size_removes_the_oldest_runs_until_the_data_fits(tmp_path):
    path = tmp_path / "size.snap"
    for name in ("a", "b", "c"):
        _record(path, name, size=600)
    report = collect_garbage(path, max_size=120_000)
    assert [r[1] for r in report.removed_runs] == ["a", "b"]
    with snap.open_timeline(path) as timeline:
        assert [r.name for r in timeline.runs] == ["c"]


def test_a_file_being_recorded_is_refused(tmp_path):
    path = tmp_path / "live.snap"
    with snap.record(path, name="live"):
        snap.checkpoint()
        with pytest.raises(TimelineError, match="still being recorded"):
            collect_garbage(path, keep_runs=0)


def test_cli_prints_what_it_freed_and_rejects_bad_options(tmp_path):
    path = tmp_path / "cli.snap"
    _record(path, "one")
    _record(path, "two")
    done = run_cli("gc", str(path), "--keep-runs", "1", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [r["name"] for r in report["removed_runs"]] == ["one"]
    assert report["size_after"] < report["size_before"]
    text = run_cli("gc", str(path), "--dry-run")
    assert "would remove 0 run(s)" in text.stdout
    bad = run_cli("gc", str(path), "--older-than", "soon")
    assert bad.returncode == 2 and "not a duration" in bad.stderr and "Traceback" not in bad.stderr


def test_duration_and_size_parsing():
    assert parse_duration("7d") == 7 * 86400 and parse_duration("90s") == 90
    assert parse_size("500MB") == 500_000_000 and parse_size("2GiB") == 2 * 2**30
    with pytest.raises(ValueError):
        parse_size("lots")


def test_ls_says_a_forks_parent_that_gc_removed_is_gone(tmp_path, isolated_user_config):
    from tests.e2e.replay_helpers import record_agent

    path, _, _ = record_agent(tmp_path, rounds=1)
    forked = run_cli("replay", str(path), "--to", "2", "--live")
    assert forked.returncode == 0, forked.stderr
    assert run_cli("gc", str(path), "--keep-runs", "1").returncode == 0
    listed = run_cli("ls", str(path))
    assert listed.returncode == 0 and "@2 (gone)" in listed.stdout, listed.stdout
