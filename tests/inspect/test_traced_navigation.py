"""Step over, next call of this function and next exception on traced steps (issue 20).

``Steps.find`` over trace chunks (``store/chunk_find.py``) is checked against the obvious
answer computed from every step's summary as the chunk reader builds it, in both directions,
from many places of a line-traced recording of code that knows nothing about SnapState:
mistune (a Markdown parser from PyPI: generators, recursion) rendering on two threads, and the
standard library's JSON decoder raising and catching errors.
"""

from __future__ import annotations

import json
import random
import threading

import mistune
import pytest

import snapstate_capture as snap
from snapstate_inspect.model.navigation import Navigator

DOCUMENT = """# Notes

Some *emphasis*, a [link](http://example.com) and `code`.

- one
- two with **strong**

> a quote with a list:
> 1. first
> 2. second
"""


def _program() -> None:
    markdown = mistune.create_markdown()
    worker = threading.Thread(target=markdown, args=(DOCUMENT * 2,), name="renderer")
    worker.start()
    markdown(DOCUMENT)
    worker.join()
    for text in ('{"a": 1}', '{"a": }', "[1, 2", '"ok"'):
        try:
            json.loads(text)
        except json.JSONDecodeError:
            pass


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    path = tmp_path_factory.mktemp("nav") / "nav.snap"
    include = [f"{mistune.__path__[0]}/*.py", json.decoder.__file__, json.__file__]
    with snap.record(path, trace="lines", include=include):
        _program()
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        assert run.steps.has_traced()
        yield run, run.steps.summaries(0, len(run.steps))


def _expected(rows, here: int, backward: bool, test) -> int | None:
    order = range(here - 1, -1, -1) if backward else range(here + 1, len(rows))
    return next((i for i in order if test(i)), None)


def _places(rows) -> list[int]:
    rng = random.Random(7)
    picks = {0, 1, len(rows) - 1, len(rows) - 2}
    picks |= {i for i, row in enumerate(rows) if row.kind in ("call", "exception", "return")
              and rng.random() < 0.01}
    picks |= {rng.randrange(len(rows)) for _ in range(40)}
    return sorted(picks)


def test_the_recording_has_what_navigation_needs(traced):
    _, rows = traced
    kinds = {row.kind for row in rows}
    assert {"line", "call", "return", "exception"} <= kinds
    assert len({row.thread for row in rows}) >= 2
    assert len({row.depth for row in rows}) >= 4


@pytest.mark.parametrize("backward", [False, True])
def test_step_over_matches_the_summaries(traced, backward):
    run, rows = traced
    nav = Navigator(run)
    for here in _places(rows):
        row = rows[here]
        want = _expected(rows, here, backward, lambda i, row=row: rows[i].depth <= row.depth
                         and rows[i].thread == row.thread)
        assert nav.step_over(here, backward=backward) == want, (here, row)


@pytest.mark.parametrize("backward", [False, True])
def test_next_call_of_this_function_matches_the_summaries(traced, backward):
    run, rows = traced
    nav = Navigator(run)

    def new_stretch(i: int, function) -> bool:
        return rows[i].function == function and (
            i == 0 or rows[i - 1].function != function or rows[i - 1].depth != rows[i].depth)

    for here in _places(rows):
        row = rows[here]
        if row.kind == "call" and row.label:
            continue  # labelled calls are @snap.step steps: none in a traced recording
        want = (None if row.function is None else
                _expected(rows, here, backward, lambda i, f=row.function: new_stretch(i, f)))
        assert nav.call(here, backward=backward) == want, (here, row)


@pytest.mark.parametrize("backward", [False, True])
def test_next_exception_matches_the_summaries(traced, backward):
    run, rows = traced
    nav = Navigator(run)
    exceptions = [i for i, row in enumerate(rows) if row.kind == "exception"]
    assert len(exceptions) >= 2
    for here in _places(rows) + exceptions[:3] + exceptions[-3:]:
        want = _expected(rows, here, backward, lambda i: rows[i].kind == "exception")
        assert nav.exception(here, backward=backward) == want, here


def test_matching_text_matches_the_summaries(traced):
    run, rows = traced
    for needle in ("decoder", "parse_", "Render"):
        want = [i for i, row in enumerate(rows) if needle.lower() in
                f"{row.function or ''} {row.filename or ''} {row.label or ''}".lower()]
        assert want and run.steps.matching(0, len(rows), text=needle) == want


async def test_navigation_keys_on_a_traced_run_go_there_from_a_worker(traced):
    from snapstate_inspect.app import SnapStateApp

    from .conftest import settle

    run, rows = traced
    exceptions = [i for i, row in enumerate(rows) if row.kind == "exception"]
    app = SnapStateApp(run.timeline)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        app.go(0, jump=True)
        await settle(pilot)
        screen = app.screen
        handed_over, seek = [], screen._seek_worker
        screen._seek_worker = lambda *args: (handed_over.append(args), seek(*args))
        await pilot.press("x")
        await settle(pilot)
        assert app.selection.step == exceptions[0] and len(handed_over) == 1
        await pilot.press("x")
        await settle(pilot)
        assert app.selection.step == exceptions[1]
        await pilot.press("X")
        await settle(pilot)
        assert app.selection.step == exceptions[0]
        app.go(len(rows) - 1, jump=True)
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        assert app.selection.step == len(rows) - 1 and "no later exception" in screen._note
        here = exceptions[0]
        app.go(here, jump=True)
        await settle(pilot)
        assert screen._note == ""  # a note says something of the step it was said at
        await pilot.press("o")
        await settle(pilot)
        assert app.selection.step == Navigator(run).step_over(here)
