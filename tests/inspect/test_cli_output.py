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


def test_a_divergence_whose_previews_agree_says_where_to_look():
    """Two objects whose saved previews differ only in their memory addresses (a graph whose
    edge weight changed below the preview's depth) get a line saying so, not two equal-looking
    reprs alone; a difference the previews show is listed by path."""
    from rich.console import Console

    from snapstate_inspect.commands.replay import render_divergence

    def text(report):
        console = Console(width=200, record=True, color_system=None)
        for part in render_divergence(report):
            console.print(part)
        return console.export_text()

    base = {"step": 12, "message": "1 value(s) differ: g",
            "expected": {"kind": "return", "function": "build", "filename": "g.py", "lineno": 5},
            "actual": {"kind": "return", "function": "build", "filename": "g.py", "lineno": 5}}
    deeper = text({**base, "variables": [{
        "frame": "build", "name": "g", "expected": "<Graph object at 0x7f1ba1e6b3d0>",
        "actual": "<Graph object at 0x7f7b4654ab10>", "diff": []}]})
    assert "the saved previews agree (memory addresses aside)" in deeper
    assert "--to 12 --pdb" in deeper
    shown = text({**base, "variables": [{
        "frame": "build", "name": "g", "expected": "{'w': 1}", "actual": "{'w': 5}",
        "diff": [["['w']", "1", "5"]]}]})
    assert "['w']: 1 -> 5" in shown and "previews agree" not in shown
