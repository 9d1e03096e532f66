"""Command output piped to another program (or a file) is not hard-wrapped at 80 columns
(issue 20): ``snapstate diff A B | grep`` must see whole lines."""

from __future__ import annotations

from tests.conftest import ROOT, run_cli

SAMPLES = ROOT / "sample_snapshots"


def test_piped_diff_lines_are_not_broken():
    done = run_cli("diff", str(SAMPLES / "research_agent.snap"),
                   str(SAMPLES / "buggy_agent.snap"), env={"COLUMNS": ""})
    assert done.returncode == 1, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("A: ") and first.endswith("(research-agent, 146 steps)")
    assert len(first) > 80
    assert not any(line == "steps)" for line in done.stdout.splitlines())
