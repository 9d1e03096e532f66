"""The committed sample timelines are readable, current, and still show what the README says.

A sample is stale when recording its program again with the current code gives a different
normalised fingerprint (``examples/fingerprint.py``): the examples, a capture rule or the file
format changed since it was committed. The fix is one command: ``python -m examples.make_samples``.
"""

from __future__ import annotations

import platform

import pytest

import snapstate_capture as snap
from examples.fingerprint import first_difference, fingerprint
from examples.make_samples import SAMPLES, Sample, sample_path
from tests.conftest import ROOT, run_cli, run_python

MAX_SAMPLE_BYTES = 2 * 1024 * 1024


def _committed(name: str):
    return sample_path(ROOT, next(s for s in SAMPLES if s.name == name))


def _same_python(path) -> bool:
    with snap.open_timeline(path) as timeline:
        recorded = str(timeline.runs[-1].env.get("python", ""))
    return recorded.rsplit(".", 1)[0] == platform.python_version().rsplit(".", 1)[0]


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_committed_sample_is_current(sample: Sample, tmp_path):
    committed = sample_path(ROOT, sample)
    assert committed.exists(), f"{committed} is missing: run `python -m examples.make_samples`"
    assert committed.stat().st_size < MAX_SAMPLE_BYTES
    done = run_python("-m", "examples.make_samples", "--only", sample.name,
                      "--root", str(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    portable = not _same_python(committed)
    difference = first_difference(fingerprint(committed, portable=portable),
                                  fingerprint(sample_path(tmp_path, sample), portable=portable))
    assert not difference, (f"{committed.name} is stale — run `python -m examples.make_samples` "
                            f"and commit sample_snapshots/. First difference at {difference}")


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_sample_opens_with_the_cli(sample: Sample):
    path = str(sample_path(ROOT, sample))
    listed = run_cli("ls", path, "--json")
    assert listed.returncode == 0, listed.stderr
    assert f'"status": "{sample.status}"' in listed.stdout
    shown = run_cli("show", path, "--step", "0")
    assert shown.returncode == 0, shown.stderr
    assert "step 0 of" in shown.stdout


def _steps_of(run, label: str, kind: str) -> list:
    """Steps of ``kind`` recorded by the ``@snap.step`` function ``label``."""
    return [s for s in run.steps if s.label == label and s.kind == kind]


def test_research_agent_retries_the_flaky_api_and_asks_a_human():
    with snap.open_timeline(_committed("research_agent")) as timeline:
        run = timeline.runs[-1]
        assert run.status == "finished"
        assert 100 <= len(run.steps) <= 300
        steps = list(run.steps)
        failures = [s for s in _steps_of(run, "fetch_citation", "effect")
                    if "exception" in s.extra]
        assert failures, "the citation API never failed"
        assert all("ServiceUnavailable" in s.extra["exception"].repr for s in failures)
        for failure in failures:
            retry = steps[failure.index + 1]
            assert (retry.kind, retry.label) == ("checkpoint", "retrying")
            assert retry.extra["attempt"].repr == "1"
        cited = _steps_of(run, "cite", "return")
        assert len(cited) == len({s.extra["return"].repr for s in cited}) >= 5
        assert len(_steps_of(run, "research", "call")) == 5
        assert len(_steps_of(run, "call_model", "effect")) >= 10
        answers = _steps_of(run, "ask_human", "effect")
        assert [a.extra["result"].repr for a in answers] == ["'yes'"]


def _doc_ids(step) -> dict[str, str]:
    """``sources`` of the run_agent frame at ``step``: dict key -> the Source's doc_id repr."""
    frame = next(f for f in step.frames if f.function == "run_agent")
    if "sources" not in frame.locals:
        return {}
    out = {}
    for label, child in frame.locals["sources"].preview.get("children", []):
        fields = dict(child.get("children", []))
        out[label] = fields[".doc_id"]["repr"]
    return out


def test_buggy_agent_corrupts_its_state_long_before_it_fails():
    with snap.open_timeline(_committed("buggy_agent")) as timeline:
        run = timeline.runs[-1]
        assert run.status == "failed" and run.error["type"].endswith("KeyError")
        steps = list(run.steps)
        last = steps[-1]
        assert last.kind == "exception" and last.function == "write_report"
        bad_id = last.extra["exception"].repr  # KeyError('case study harbour city')
        corrupted_at = None
        for step in steps:
            if any(f"'{key[2:-2]}'" != doc_id for key, doc_id in _doc_ids(step).items()):
                corrupted_at = step
                break
        assert corrupted_at is not None
        assert (corrupted_at.kind, corrupted_at.label) == ("return", "describe_source")
        assert last.index - corrupted_at.index >= 100
        corrupted = [doc_id for key, doc_id in _doc_ids(last).items()
                     if f"'{key[2:-2]}'" != doc_id]
        assert any(doc_id in bad_id for doc_id in corrupted)


def _signature(step) -> tuple:
    return (step.kind, step.function, step.label, step.lineno,
            tuple((name, value.repr) for name, value in step.extra.items()))


def test_the_two_research_runs_part_at_the_human_answer():
    with snap.open_timeline(_committed("research_agent")) as a, \
            snap.open_timeline(_committed("research_agent_b")) as b:
        steps_a, steps_b = list(a.runs[-1].steps), list(b.runs[-1].steps)
        first = next(i for i, (x, y) in enumerate(zip(steps_a, steps_b))
                     if _signature(x) != _signature(y))
        assert first >= 100
        assert (steps_a[first].label, steps_a[first].kind) == ("ask_human", "effect")
        assert steps_a[first].extra["result"].repr == "'yes'"
        assert steps_b[first].extra["result"].repr == "'skip 5'"
        assert len(steps_b) < len(steps_a)


def test_async_agent_interleaves_its_question_tasks():
    with snap.open_timeline(_committed("async_agent")) as timeline:
        run = timeline.runs[-1]
        assert run.status == "finished"
        tasks = [s.task for s in run.steps]
    questions = [t for t in tasks if t and t.startswith("question-")]
    assert set(questions) == {"question-1", "question-2", "question-3"}
    first_1, last_1 = questions.index("question-1"), len(questions) - 1 - questions[::-1].index(
        "question-1")
    assert "question-2" in questions[first_1:last_1], "the tasks did not run concurrently"
    assert len({t for t in tasks if t and not t.startswith("question-")}) >= 3  # gathered calls


def test_the_committed_async_agent_replays_without_divergence(tmp_path):
    """The README's claim (issue 15 point 3): the committed sample, as a user has it, replays
    every step — its tasks compared per lineage, its tool calls served from the journal."""
    with snap.open_timeline(_committed("async_agent")) as timeline:
        steps = len(timeline.runs[-1].steps)
    done = run_cli("replay", str(_committed("async_agent")), "--trust", cwd=tmp_path,
                   timeout=180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"replayed {steps} steps, no divergence" in done.stdout


def test_stack_vm_is_recorded_line_by_line_without_changes_to_its_code():
    assert "snapstate" not in (ROOT / "examples" / "stack_vm.py").read_text().split('"""', 2)[2]
    with snap.open_timeline(_committed("stack_vm")) as timeline:
        run = timeline.runs[-1]
        assert run.status == "finished"
        assert run.entry["module"] == "examples.stack_vm"
        in_loop = [s for s in run.steps if s.kind == "line" and s.function == "execute"]
        assert len(in_loop) >= 500
        lines = {s.lineno for s in in_loop}
        assert len(lines) >= 20, "not every line of the interpreter loop was recorded"
        pcs, outputs = [], []
        for step in in_loop:
            local = step.frames[-1].locals
            if "pc" in local:  # bound from the fourth line of execute() on
                pcs.append(local["pc"].repr)
                outputs.append(local["output"].repr)
        assert len(set(pcs)) >= 30
        assert outputs[-1] == "[21, 720]" and "[21]" in outputs


def test_the_readme_walkthrough_matches_the_samples():
    """The step numbers and values README.md's walkthrough quotes are those of the samples."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for quoted in ("`g` `26` `Enter`", "added at step 23 and changed at step 32",
                   "--trust --to 31 --pdb", "--trust --to 126 --live",
                   "first divergence: step 127 of A and step 127 of B",
                   "first divergence at step 15"):
        assert quoted in readme, quoted
    with snap.open_timeline(_committed("research_agent")) as timeline:
        steps = timeline.runs[-1].steps
        assert (steps[25].label, "503" in steps[25].extra["exception"].repr) == (
            "fetch_citation", True)
        assert (steps[26].kind, steps[26].label) == ("checkpoint", "retrying")
        assert (steps[127].kind, steps[127].label) == ("effect", "ask_human")
        assert steps[126].index == 126 and len(steps) > 127
    with snap.open_timeline(_committed("buggy_agent")) as timeline:
        steps = timeline.runs[-1].steps
        assert (steps[31].kind, steps[31].label) == ("call", "describe_source")
        assert "case_study_harbour_city" in steps[31].extra["source"].repr
        history = [(i, _doc_ids(steps[i]).get("['case_study_harbour_city']"))
                   for i in range(len(steps))]
        changes = [(i, doc) for n, (i, doc) in enumerate(history)
                   if n and doc != history[n - 1][1]]
        assert changes == [(23, "'case_study_harbour_city'"), (32, "'case study harbour city'")]
        corrupted_first = next(i for i in range(len(steps))
                               if "'green roofs overview'" in _doc_ids(steps[i]).values())
        assert corrupted_first == 15
