"""``SnapStateSaver``: LangGraph's checkpointer conformance suite, and a real graph using it
for history, forks and human-in-the-loop resumes, in a timeline file (issue 16)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest

pytest.importorskip("langgraph")
conformance = pytest.importorskip("langgraph.checkpoint.conformance")

import snapstate_capture as snap  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402
from snapstate_capture.integrations.langgraph import SnapStateSaver  # noqa: E402


def test_passes_langgraphs_checkpointer_conformance_suite(tmp_path):
    from langgraph.checkpoint.conformance.report import ProgressCallbacks

    made = []

    @conformance.checkpointer_test(name="SnapStateSaver")
    async def factory():
        saver = SnapStateSaver(tmp_path / f"conformance-{len(made)}.snap", mirror=False)
        made.append(saver)
        yield saver
        saver.close()

    report = asyncio.run(conformance.validate(factory, progress=ProgressCallbacks.quiet()))
    results = report.results
    base = ["put", "put_writes", "get_tuple", "list", "delete_thread", "copy_thread"]
    assert {name: results[name].passed for name in base} == {name: True for name in base}
    assert sum(results[name].tests_passed for name in base) >= 60
    assert all(not results[name].failures for name in results)


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(saver: SnapStateSaver):
    def plan(state: State) -> dict:
        return {"log": ["planned"]}

    def approve(state: State) -> dict:
        answer = interrupt("publish the plan?")
        return {"log": [f"approved: {answer}"]}

    def publish(state: State) -> dict:
        return {"log": ["published"]}

    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("approve", approve)
    builder.add_node("publish", publish)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "approve")
    builder.add_edge("approve", "publish")
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=saver)


def test_history_interrupt_resume_and_fork_in_a_timeline_file(tmp_path):
    path = tmp_path / "graph.snap"
    config = {"configurable": {"thread_id": "t1"}}
    with SnapStateSaver(path) as saver:
        graph = _graph(saver)
        first = graph.invoke({"log": []}, config)
        assert first["__interrupt__"][0].value == "publish the plan?"
        assert graph.get_state(config).next == ("approve",)
    with SnapStateSaver(path) as saver:  # another process's view: the same file
        graph = _graph(saver)
        done = graph.invoke(Command(resume="yes"), config)
        assert done["log"] == ["planned", "approved: yes", "published"]
        history = list(graph.get_state_history(config))
        assert [s.values.get("log") for s in history][0] == done["log"]
        assert len(history) >= 4
        # fork: back to the checkpoint after "plan", with another log, resumed differently
        after_plan = next(s for s in history if s.next == ("approve",))
        forked = graph.update_state(after_plan.config, {"log": ["edited"]})
        graph.invoke(None, forked)
        resumed = graph.invoke(Command(resume="no"), forked)
        assert resumed["log"] == ["planned", "edited", "approved: no", "published"]
        assert graph.get_state(config).values["log"][-1] == "published"
    with snap.open_timeline(path) as timeline:  # the inspector's view: checkpoints as steps
        runs = [run for run in timeline.runs if run.name == "langgraph checkpoints"]
        assert len(runs) == 2 and all(run.status == "finished" for run in runs)
        labels = [step.label for step in runs[-1].steps]
        assert labels and all(label.startswith("t1 step ") for label in labels)
        last = runs[-1].steps[-1].extra["state"].preview
        assert "published" in last["repr"]


def test_refuses_a_file_that_is_no_timeline(tmp_path):
    bad = tmp_path / "notes.snap"
    bad.write_text("not a timeline")
    with pytest.raises(snap.TimelineError):
        SnapStateSaver(bad)


def test_a_store_url_is_refused_not_taken_for_a_file_name(tmp_path, monkeypatch):
    """The saver's tables are the timeline file's; a postgresql:// URL made a folder named
    ``postgresql:`` in the current directory."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(snap.SnapStateError, match="postgresql:// store is not supported"):
        SnapStateSaver("postgresql://agent@localhost/timelines")
    assert list(tmp_path.iterdir()) == []


def test_replay_writes_no_checkpoint_and_a_live_fork_is_a_langgraph_fork(tmp_path):
    """Inside ``snap.record`` the saver's reads and writes are effects: a replay is served
    them (the file keeps the recorded history), and a fork from a super-step's checkpoint
    writes its checkpoints as a branch off the recorded one there."""
    import sqlite3
    import subprocess
    import sys

    from tests.conftest import ROOT

    path = tmp_path / "saver.snap"
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    env.pop("SNAPSTATE_KEY", None)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=120)

    def checkpoints() -> list[tuple]:
        with sqlite3.connect(path) as conn:
            return conn.execute("SELECT checkpoint_id, parent_id FROM langgraph_checkpoints "
                                "ORDER BY checkpoint_id").fetchall()

    made = run(str(ROOT / "tests" / "programs" / "langgraph_saver_fork.py"), str(path))
    assert made.returncode == 0 and made.stderr == "", made.stderr
    assert "['plan', 'draft', 'publish']" in made.stdout
    recorded = checkpoints()
    assert len(recorded) == 5  # input, plan, draft, publish and the empty start
    replayed = run("-m", "snapstate_inspect", "replay", str(path), "--trust")
    assert "no divergence" in replayed.stdout, replayed.stdout + replayed.stderr
    assert checkpoints() == recorded
    with snap.open_timeline(path) as timeline:
        steps = list(timeline.runs[-1].steps)
        after_plan = next(s.index for s in steps if s.kind == "checkpoint" and s.label == "plan")
    forked = run("-m", "snapstate_inspect", "replay", str(path), "--trust", "--to",
                 str(after_plan), "--live")
    assert "continued live as fork" in forked.stdout, forked.stdout + forked.stderr
    now = checkpoints()
    assert set(recorded) < set(now) and len(now) == len(recorded) + 2  # draft, publish again
    with SnapStateSaver(path, mirror=False) as saver:
        history = list(saver.list({"configurable": {"thread_id": "t1"}}))
    children: dict[str, list] = {}
    for item in history:
        if item.parent_config:
            children.setdefault(item.parent_config["configurable"]["checkpoint_id"],
                                []).append(item)
    branched = [parent for parent, kids in children.items() if len(kids) == 2]
    assert len(branched) == 1  # the checkpoint after "plan": the recorded and the forked draft
    assert {kid.metadata["step"] for kid in children[branched[0]]} == {2}
    newest = history[0]
    assert newest.checkpoint["channel_values"]["log"] == ["plan", "draft", "publish"]
