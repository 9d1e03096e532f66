"""What the diff reports say (issue 20): a time-limited run diff that found nothing says "no
difference found in the part compared", never "different"; the first divergence names each
differing variable once."""

from __future__ import annotations

from rich.console import Console

import snapstate_capture as snap
from snapstate_inspect.diff_report import render_run_report
from snapstate_inspect.model.alignment import diff_runs

from tests.conftest import ROOT

SAMPLE = ROOT / "sample_snapshots" / "research_agent.snap"


def _text(renderable) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


def test_a_partial_diff_of_a_file_against_itself_is_not_called_different():
    with snap.open_timeline(SAMPLE) as a, snap.open_timeline(SAMPLE) as b:
        result = diff_runs(a.runs[-1], b.runs[-1], time_limit=0.0)
        assert result.partial and result.first_divergence is None
        text = _text(render_run_report(result, a, b))
    last = text.strip().splitlines()[-1]
    assert last == "no difference found in the part compared (partial diff)"
    assert "different" not in text


def test_a_complete_diff_of_a_file_against_itself_is_identical():
    with snap.open_timeline(SAMPLE) as a, snap.open_timeline(SAMPLE) as b:
        result = diff_runs(a.runs[-1], b.runs[-1])
        text = _text(render_run_report(result, a, b))
    assert not result.partial and text.strip().splitlines()[-1] == "identical"


def _helper(sources, flag):
    sources.append("x" if flag else "y")
    snap.checkpoint("changed")


def _work(flag):
    sources = ["a"]
    snap.checkpoint("start")
    _helper(sources, flag)
    return sources


def test_the_first_divergence_names_each_variable_once(tmp_path):
    """``sources`` differs in both frames holding it (and the step's own values): the message
    said ``differ in state: sources, sources``."""
    paths = []
    for flag in (True, False):
        path = tmp_path / f"{flag}.snap"
        with snap.record(path):
            _work(flag)
        paths.append(path)
    with snap.open_timeline(paths[0]) as a, snap.open_timeline(paths[1]) as b:
        result = diff_runs(a.runs[-1], b.runs[-1])
    first = result.first_divergence
    assert first is not None and first.reason == "state"
    frames = [frame for frame, var in first.diff.variables() if var.name == "sources"]
    assert len(frames) == 2, "the variable differs in two frames"
    names = first.message.split("differ in state: ")[1].split(", ")
    assert "sources" in names and len(names) == len(set(names)), first.message
