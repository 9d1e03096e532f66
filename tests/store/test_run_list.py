"""The run list of a store: keyset pages, filters, counts and id look-ups, on both engines; and
opening a run by id without reading every run."""

from __future__ import annotations

import pytest

import snapstate_capture as snap
from snapstate_capture.errors import NotFoundError

from .many_runs import fill_runs


@pytest.fixture
def filled(store_location):
    rows = fill_runs(store_location, 250)
    timeline = snap.open_timeline(store_location)
    yield timeline, rows
    timeline.close()


def test_pages_walk_every_run_newest_first_without_repeats(filled):
    timeline, rows = filled
    seen, before = [], None
    while True:
        page = timeline.run_page(before=before, limit=60)
        if not page:
            break
        seen.extend(run.id for run in page)
        before = page[-1].seq
    assert seen == [row["id"] for row in reversed(rows)]
    assert timeline.run_count() == 250


def test_filters_pick_status_user_host_and_text(filled):
    timeline, rows = filled
    failed = [r for r in rows if r["status"] == "failed"]
    assert timeline.run_count({"status": "failed"}) == len(failed)
    page = timeline.run_page(limit=500, where={"status": "failed", "user": "dita"})
    assert page and all(run.status == "failed" and run.user == "dita" for run in page)
    assert len(page) == sum(1 for r in failed if '"user": "dita"' in r["env"])
    assert {run.host for run in timeline.run_page(limit=500, where={"host": "agent-2"})} \
        == {"agent-2"}
    # text: a substring of the name (any case), the id, the host or the user
    names = [run.name for run in timeline.run_page(limit=500, where={"text": "JOB-24"})]
    assert sorted(names) == sorted(["job-24", *(f"job-24{i}" for i in range(10))])
    assert timeline.run_count({"text": rows[7]["id"][:14]}) == 1
    assert timeline.run_count({"text": "chen"}) == sum(1 for r in rows if "chen" in r["env"])
    assert timeline.run_count({"text": "no such thing"}) == 0
    assert timeline.run_count({"text": "%"}) == 0  # LIKE's wildcards are searched as text


def test_a_page_deep_in_the_list_starts_where_its_offset_says(filled):
    timeline, rows = filled
    newest_first = list(reversed(rows))
    before = timeline.run_seq_at(199)
    page = timeline.run_page(before=before, limit=10)
    assert [run.id for run in page] == [r["id"] for r in newest_first[200:210]]
    assert timeline.run_seq_at(250) is None


def test_a_run_is_found_by_its_prefix_without_reading_the_list(filled):
    timeline, rows = filled
    wanted = rows[42]
    run = timeline.run(wanted["id"][:12])
    assert run.id == wanted["id"] and run.name == "job-42"
    assert timeline._runs is None  # the list was never read
    assert timeline.run().id == rows[-1]["id"]  # the newest
    with pytest.raises(NotFoundError, match="no run with id"):
        timeline.run("ffffffffffffffffffffffff0")
    assert timeline.reload_run(wanted["id"]).id == wanted["id"]
    assert timeline.reload_run(wanted["id"][:8]) is None  # a whole id only


def test_an_empty_store_says_it_holds_no_runs(store_location):
    fill_runs(store_location, 0)
    with snap.open_timeline(store_location) as timeline:
        with pytest.raises(NotFoundError, match="holds no runs"):
            timeline.run()
        assert timeline.run_count() == 0 and timeline.run_page() == []
