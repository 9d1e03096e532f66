"""LangGraph with zero glue: a plain StateGraph agent (GenericFakeChatModel, ToolNode, a file
tool and an HTTP tool) recorded under ``snap.record`` and under ``snapstate record``, then
replayed, stopped in pdb, forked live and resumed after SIGKILL — with every model and tool
call that really ran counted in a side file (issue 16)."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph")

import snapstate_capture as snap  # noqa: E402
from tests.corpus.frameworks import Agent, labels, placeholders  # noqa: E402

CALLS = ["model", "tool read_notes", "tool get_weather", "model"]


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    return Agent("examples.langgraph_agent", tmp_path_factory.mktemp("langgraph"))


@pytest.fixture(scope="module")
def recorded(agent):
    path = agent.home / "agent.snap"
    result = agent.record(path)
    assert result.returncode == 0, result.stderr
    assert "Plant it." in result.stdout
    assert result.stderr == ""  # no placeholder, no warning from the framework's machinery
    assert sorted(agent.calls()) == sorted(CALLS)
    return path


def test_model_and_tool_calls_are_effects_and_super_steps_checkpoints(recorded):
    kinds = labels(recorded)
    effects = [label for _, kind, label in kinds if kind == "effect"]
    assert effects.count("model.CountingModel") == 2
    assert sorted(e for e in effects if e.startswith("tool.")) == ["tool.get_weather",
                                                                    "tool.read_notes"]
    checkpoints = [label for _, kind, label in kinds if kind == "checkpoint"]
    assert checkpoints == ["__start__", "agent", "tools", "agent"]
    with snap.open_timeline(recorded) as timeline:
        last = timeline.runs[-1].steps[-1]
        state = last.extra["state"].preview
        step_value = last.extra["step"].repr
        graph = last.frames[-1].locals["graph"]
        graph_preview, graph_repr = graph.preview, graph.repr
    messages = dict(state["children"])["['messages']"]
    roles = [child[1]["message"]["role"] for child in messages["children"]]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    assert messages["children"][1][1]["repr"] == "assistant: tool call read_notes, get_weather"
    assert step_value == "3"
    assert graph_preview["machinery"] is True
    assert graph_repr == "<CompiledStateGraph nodes=agent,tools>"
    assert placeholders(recorded) == []


def test_replay_serves_every_call_five_times_in_five(agent, recorded):
    agent.reset()
    results = agent.replays(recorded, 5)
    assert [r and r["status"] for r in results] == ["ok"] * 5, results
    assert agent.calls() == []  # not one model or tool call ran again (parallel ones neither)


def test_pdb_at_the_second_model_call_shows_the_live_messages(agent, recorded):
    index = [i for i, kind, label in labels(recorded) if label == "model.CountingModel"][-1]
    agent.reset()
    result, data = agent.replay(recorded, "--to", str(index), "--pdb",
                                input="p [m.type for m in state['messages']]\nc\n")
    assert data is not None and data["status"] == "ok", result.stdout + result.stderr
    assert "['human', 'ai', 'tool', 'tool']" in result.stdout
    assert agent.calls() == []


def test_live_fork_runs_only_the_remaining_calls(agent, recorded, tmp_path):
    import shutil

    path = shutil.copy(recorded, tmp_path / "fork.snap")
    index = [i for i, kind, label in labels(path) if label == "tools"][0]
    agent.reset()
    result, data = agent.replay(path, "--to", str(index), "--live")
    assert data is not None and data["status"] == "ok", result.stdout + result.stderr
    assert agent.calls() == ["model"]  # only the answer after the tools
    with snap.open_timeline(path) as timeline:
        fork = timeline.runs[-1]
        assert (fork.parent.run_id, fork.parent.step) == (timeline.runs[0].id, index)
        assert fork.status == "finished"


def test_resume_after_sigkill_reruns_only_the_call_in_flight(agent, tmp_path):
    path = tmp_path / "killed.snap"
    agent.reset()
    agent.kill_during(path, "tool get_weather")
    assert sorted(agent.calls()) == ["model", "tool get_weather", "tool read_notes"]
    with snap.open_timeline(path) as timeline:
        assert timeline.runs[-1].status == "crashed"
    agent.reset()
    result = agent.python("-m", "snapstate_inspect", "resume", str(path), "--trust")
    assert result.returncode == 0, result.stdout + result.stderr
    assert agent.calls() == ["tool get_weather", "model"]  # in flight, then what came after
    with snap.open_timeline(path) as timeline:
        fork = timeline.runs[-1]
        assert fork.status == "finished"
        assert fork.steps[-1].label == "agent"


def test_recorded_unchanged_under_snapstate_record(agent, tmp_path):
    path = tmp_path / "cli.snap"
    agent.reset()
    result = agent.record_cli(path)
    assert result.returncode == 0, result.stderr
    assert sorted(agent.calls()) == sorted(CALLS)
    effects = [label for _, kind, label in labels(path) if kind == "effect"]
    assert effects.count("model.CountingModel") == 2
    agent.reset()
    result, data = agent.replay(path)
    assert data is not None and data["status"] == "ok", result.stdout + result.stderr
    assert agent.calls() == []
