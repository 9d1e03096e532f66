"""``snapstate diff``: sides, exit codes, the readable report and the stable JSON form."""

from __future__ import annotations

import json

import pytest

import snapstate_capture as snap
from snapstate_inspect.cli import main
from tests.conftest import PROGRAMS, run_cli, run_python
from tests.hostile import as_stranger


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Runs of the research agent in worlds a and b, one file each."""
    folder = tmp_path_factory.mktemp("pair")
    paths = {}
    for world in ("a", "b"):
        paths[world] = folder / f"{world}.snap"
        done = run_python(str(PROGRAMS / "research_agent.py"), str(paths[world]), world)
        assert done.returncode == 0, done.stderr
    return paths


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_run_diff_names_the_first_divergent_step_and_variable(pair):
    done = run_cli("diff", str(pair["a"]), str(pair["b"]))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    first = [line for line in lines if line.startswith("first divergence")]
    assert first == ["first divergence: step 3 of A and step 3 of B differ in state: result"]
    assert "~ result: 'page v1: the answer is 42' → 'page v2: the answer is 43'" in done.stdout
    regions = [line for line in lines if line.startswith("region ")]
    assert regions and all(line.startswith(f"region {i} of {len(regions)}  ")
                           for i, line in enumerate(regions, start=1))
    assert "A 3" in regions[0] and "B 3" in regions[0]  # the first divergence's range too
    assert any(line.startswith("region ") and "inserted  B 6-7" in line for line in lines)
    assert all(lines[lines.index(line) - 1] == "" for line in regions)
    assert "aligned: 9 steps matched, 2 only in B, 0 only in A" in done.stdout
    assert lines[-1] == "different"


def test_run_diff_json_is_the_documented_form(pair):
    done = run_cli("diff", str(pair["a"]), str(pair["b"]), "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["kind"] == "runs" and data["identical"] is False and data["mode"] == "preview"
    first = data["first_divergence"]
    assert {k: first[k] for k in ("a_step", "b_step", "reason")} == {
        "a_step": 3, "b_step": 3, "reason": "state"}
    assert first["variables"] == [{"frame": "run_agent", "name": "result", "status": "changed"}]
    assert data["counts"] == {"matched": 9, "deleted": 0, "inserted": 2}
    assert [r["kind"] for r in data["regions"]] == ["state", "inserted", "state"]
    region = data["regions"][2]["diff"]
    notes = [v for f in region["frames"] for v in f["variables"] if v["name"] == "notes"][0]
    assert notes["changes"][0] == {"path": "notes['read']", "kind": "changed",
                                   "old": "'page v1: the answer is 42'",
                                   "new": "'page v2: the answer is 43'"}
    assert set(data["a"]) == {"file", "run", "run_name", "steps", "step"}
    assert data["a"]["run_name"] == "world-a" and data["b"]["steps"] == 11


def test_identical_runs_exit_zero(pair, capsys):
    code, out, _ = _run(capsys, "diff", pair["a"], pair["a"])
    assert code == 0
    assert out.splitlines()[-1] == "identical"


def test_step_diff_of_two_files_and_of_one_file(pair, capsys):
    code, out, _ = _run(capsys, "diff", pair["a"], "--step", "3", pair["b"], "--step", "3",
                        "--json")
    assert code == 1
    data = json.loads(out)
    assert data["kind"] == "steps" and (data["a"]["step"], data["b"]["step"]) == (3, 3)
    assert data["first_divergence"]["variables"][0]["name"] == "result"
    code, out, _ = _run(capsys, "diff", pair["a"], "--steps", "0", "-1")
    assert code == 1
    assert "plan[0]['status']: 'todo' → 'done'" in out
    assert "notes['answer']: added '42'" in out
    code, out, _ = _run(capsys, "diff", pair["a"], "--steps", "2", "2")
    assert code == 0 and out.splitlines()[-1] == "identical"


def test_two_runs_of_one_file_by_run_id(tmp_path, capsys):
    path = tmp_path / "both.snap"
    for world in ("a", "b"):
        assert run_python(str(PROGRAMS / "research_agent.py"), str(path), world).returncode == 0
    with snap.open_timeline(path) as timeline:
        first, second = (run.id[:6] for run in timeline.runs)
    code, out, _ = _run(capsys, "diff", path, "--run", first, path, "--run", second, "--json")
    assert code == 1
    data = json.loads(out)
    assert (data["a"]["run_name"], data["b"]["run_name"]) == ("world-a", "world-b")
    assert data["first_divergence"]["a_step"] == 3


@pytest.mark.parametrize("argv, message", [
    (["diff", "{a}"], "expected two sides"),
    (["diff", "--step", "1", "{a}", "{b}"], "--step must follow the FILE"),
    (["diff", "{a}", "--step", "1", "{b}"], "on both sides"),
    (["diff", "{a}", "--step", "x", "{b}", "--step", "1"], "needs an integer"),
    (["diff", "{a}", "{b}", "--bogus"], "unknown option --bogus"),
    (["diff", "{a}", "{b}", "--steps", "1", "2"], "--steps N M takes exactly one FILE"),
    (["diff", "{a}", "--step", "99", "{b}", "--step", "0"], "step 99 out of range"),
    (["diff", "{a}", "--run", "zzz", "{b}"], "no run with id 'zzz'"),
    (["diff", "{a}", "{missing}"], "no such file"),
])
def test_bad_arguments_give_one_line_and_exit_2(pair, tmp_path, capsys, argv, message):
    names = {"a": pair["a"], "b": pair["b"], "missing": tmp_path / "nope.snap"}
    code, out, err = _run(capsys, *[a.format(**names) for a in argv])
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and message in err, err


def _table_agent():
    table = {i: i * i for i in range(1_000)}
    snap.checkpoint("a")
    table[777] = 0
    snap.checkpoint("b")


def _hostile_agent():
    text = "[bold red]fine[/]"
    snap.checkpoint("a")
    text = "[link=http://x]click[/link]\x1b]52;c;AAAA\x07"
    snap.checkpoint("b")
    return text


def _record(path, program):
    """Record ``program`` with a root frame holding nothing but ``path`` and ``program``."""
    with snap.record(str(path)):
        program()


def test_full_values_with_trust(tmp_path, capsys):
    path = tmp_path / "big.snap"
    with as_stranger(tmp_path):  # a file from someone else: full values need --trust
        _record(path, _table_agent)
    code, out, _ = _run(capsys, "diff", path, "--steps", "0", "1", "--json")
    preview = json.loads(out)["diff"]["frames"][-1]["variables"][0]
    assert [c["kind"] for c in preview["changes"]] == ["hidden"]
    code, out, _ = _run(capsys, "diff", path, "--steps", "0", "1", "--full", "--json")
    untrusted = json.loads(out)["diff"]["frames"][-1]["variables"][0]
    assert untrusted["changes"][0]["kind"] == "hidden"  # previews: the gate said no
    assert any("--trust" in note for note in untrusted["notes"])
    code, out, _ = _run(capsys, "diff", path, "--steps", "0", "1", "--full", "--trust", "--json")
    assert code == 1
    data = json.loads(out)
    assert data["mode"] == "full"
    table = data["diff"]["frames"][-1]["variables"][0]
    assert table["changes"] == [{"path": "table[777]", "kind": "changed", "old": "603729",
                                 "new": "0"}]


def test_values_from_the_file_are_printed_as_plain_text(tmp_path, capsys):
    path = tmp_path / "hostile.snap"
    _record(path, _hostile_agent)
    code, out, _ = _run(capsys, "diff", path, "--steps", "0", "1")
    assert code == 1
    assert "'[bold red]fine[/]' → '[link=http://x]click[/link]\\x1b]52;c;AAAA\\x07'" in out
    assert "\x1b]52" not in out and "\x07" not in out


def test_sample_pair_report_names_the_answer_step(capsys):
    root = PROGRAMS.parent.parent / "sample_snapshots"
    code, out, _ = _run(capsys, "diff", root / "research_agent.snap",
                        root / "research_agent_b.snap")
    assert code == 1
    assert "inputs: the runs start with these differences" in out
    first = [line for line in out.splitlines() if line.startswith("first divergence")][0]
    assert "differ in state: " in first
    name = first.rsplit(": ", 1)[1]  # the human's answer: a return value or an effect result
    assert f"~ {name}: 'yes' → 'skip 5'" in out
    code, out, _ = _run(capsys, "diff", root / "research_agent.snap",
                        root / "research_agent_b.snap", "--strict", "--json")
    data = json.loads(out)
    assert data["inputs"] is None and data["first_divergence"]["a_step"] == 0


def test_inspect_compare_with_an_unknown_run_is_one_line(pair, capsys):
    code, out, err = _run(capsys, "inspect", pair["a"], pair["b"], "--compare", "zzz")
    assert code == 2
    assert err.count("\n") == 1 and "no run with id 'zzz'" in err


def test_run_diff_says_what_the_runs_were_started_with(tmp_path):
    """Two recordings of one script with other arguments: the report says so before the
    first divergence (it listed only the states that followed from them)."""
    program = tmp_path / "count.py"
    program.write_text("import sys\n\ntotal = 0\nfor i in range(int(sys.argv[1])):\n"
                       "    total += i\nprint(total)\n")
    for name, argv in (("a", ["3"]), ("b", ["4", "two words"])):
        done = run_cli("record", "-o", str(tmp_path / f"{name}.snap"), str(program), *argv,
                       cwd=tmp_path, env={"PYTHONHASHSEED": "0"})  # one seed: argv only
        assert done.returncode == 0, done.stderr
    done = run_cli("diff", str(tmp_path / "a.snap"), str(tmp_path / "b.snap"))
    lines = done.stdout.splitlines()
    assert lines[3:5] == ["started with:", "  argv: 3 → 4 'two words'"], done.stdout
    assert lines.index("started with:") < [i for i, line in enumerate(lines)
                                           if line.startswith("first divergence")][0]
    data = json.loads(run_cli("diff", "--json", str(tmp_path / "a.snap"),
                              str(tmp_path / "b.snap")).stdout)
    assert data["started_with"] == [{"fact": "argv", "a": ["3"], "b": ["4", "two words"]}]
    same = run_cli("diff", str(tmp_path / "a.snap"), str(tmp_path / "a.snap"))
    assert same.returncode == 0 and "started with" not in same.stdout


def test_two_recordings_with_seeds_of_their_own_say_so_before_their_steps(tmp_path):
    """``snapstate record`` draws a hash seed for each recording: two recordings of one
    program differ where they iterate a set of strings, and the report says the seeds
    differed (it listed nothing it was started with)."""
    program = tmp_path / "tags.py"
    program.write_text("tags = set('alpha beta gamma delta epsilon'.split())\n"
                       "order = list(tags)\nprint(len(order))\n")
    for name in ("a", "b"):
        done = run_cli("record", "-o", str(tmp_path / f"{name}.snap"), str(program),
                       cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    seeds = []
    for name in ("a", "b"):
        with snap.open_timeline(tmp_path / f"{name}.snap") as timeline:
            seeds.append(timeline.runs[-1].entry["hash_seed"])
    assert seeds[0] != seeds[1] and None not in seeds
    done = run_cli("diff", str(tmp_path / "a.snap"), str(tmp_path / "b.snap"))
    assert f"  hash seed: {seeds[0]} → {seeds[1]}" in done.stdout.splitlines(), done.stdout


def test_two_recordings_of_a_program_holding_a_jsonschema_validator_are_identical(tmp_path):
    """Each recording draws its own hash seed; a jsonschema validator (rpds maps, attrs
    classes with a salted ``__hash__``) was "different" in every pair of recordings."""
    for name in ("a", "b"):
        done = run_cli("record", "-o", str(tmp_path / f"{name}.snap"),
                       str(PROGRAMS / "schema_check.py"), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    done = run_cli("diff", str(tmp_path / "a.snap"), str(tmp_path / "b.snap"))
    assert done.returncode == 0, done.stdout
    assert done.stdout.splitlines()[-1] == "identical"
    assert "hash seed:" in done.stdout  # the seeds did differ


INTEREST = """\
import sys

import snapstate_capture as snap

with snap.record(sys.argv[1], name="interest"):
    snap.checkpoint("start")
    rate = float(sys.argv[2])
    snap.checkpoint("rate")
    p = 9.0
    for year in range(3):
        p = round(p * (1 + rate), 2)
        snap.checkpoint("year")
"""


def test_a_state_region_shows_what_the_divergence_came_to_at_its_last_step(tmp_path):
    """Two runs that differ in a rate: the region's first step shows the rate, its last step
    the balance it led to, which the report showed only under ``diff --step``."""
    program = tmp_path / "interest.py"
    program.write_text(INTEREST)
    paths = [tmp_path / f"{rate}.snap" for rate in ("0.1", "0.2")]
    for path in paths:
        done = run_python(str(program), str(path), path.stem, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    done = run_cli("diff", *map(str, paths))
    assert done.returncode == 1, done.stderr
    assert "first divergence: step 1 of A and step 1 of B differ in state: rate" in done.stdout
    region = done.stdout[done.stdout.index("region 1 of 1  state     A 1-4 B 1-4"):]
    last = region[region.index("at its last step (A 4, B 4):"):]
    assert "~ p: 11.98 → 15.55" in last and "~ rate: 0.1 → 0.2" in last
    data = json.loads(run_cli("diff", *map(str, paths), "--json").stdout)
    changed = [v["name"] for f in data["regions"][0]["last_diff"]["frames"]
               for v in f["variables"]]
    assert "p" in changed and data["regions"][0]["diff"] is not None
