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
    kept_repr = text({**base, "variables": [{
        "frame": "build", "name": "return", "expected": "'<O object at 0x7f1ba1e6b3d0>'",
        "actual": "'<O object at 0x7f7b4654ab10>'", "diff": []}]})
    assert "the values differ only in memory addresses" in kept_repr
    assert "previews agree" not in kept_repr


def test_a_mistyped_command_is_named_as_one_with_the_commands_it_is_close_to(tmp_path):
    done = run_cli("lst", str(SAMPLES / "research_agent.snap"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "snapstate: lst: no such command, nor a file to open (`snapstate -h` lists the "
        "commands); did you mean ls?"]
    missing = run_cli("nothere.snap", cwd=tmp_path)  # a file name: still opened as one
    assert missing.returncode == 2 and "nothere.snap" in missing.stderr
    assert "no such command" not in missing.stderr


def test_show_takes_the_step_as_its_second_word():
    """``snapstate show FILE 3`` is ``--step 3`` (what a newcomer types first); both given
    and different is a usage error naming them, not a guess."""
    sample = str(SAMPLES / "research_agent.snap")
    by_word = run_cli("show", sample, "3", "--json")
    by_option = run_cli("show", sample, "--step", "3", "--json")
    assert by_word.returncode == 0, by_word.stderr
    assert by_word.stdout == by_option.stdout and '"index": 3' in by_word.stdout
    last = run_cli("show", sample, "-1", "--json")
    assert last.returncode == 0 and '"index": 145' in last.stdout
    both = run_cli("show", sample, "3", "--step", "4")
    assert both.returncode == 2
    assert both.stderr.strip() == "snapstate: show: step 3 and --step 4 disagree: give one of them"
