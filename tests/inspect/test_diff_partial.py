"""A time-limited run diff that found nothing says so: "no difference found in the part
compared", never "different" (issue 20)."""

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
