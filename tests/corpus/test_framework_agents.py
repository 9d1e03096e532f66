"""Agent frameworks with zero glue (issue 16): one plain agent per framework — LangGraph
(GenericFakeChatModel, ToolNode), pydantic-ai (FunctionModel), the OpenAI Agents SDK (a
scripted Model subclass, a handoff) — each with a file tool and an HTTP tool called in
parallel in one model turn, recorded under ``snap.record`` and under ``snapstate record``,
then replayed 5 times in 5, stopped in pdb, forked live and resumed after SIGKILL, with every
model and tool call that really ran counted in a side file."""

from __future__ import annotations

import importlib.util
import re
import shutil
from dataclasses import dataclass

import pytest

import snapstate_capture as snap
from tests.corpus.frameworks import Agent, labels, placeholders


@dataclass(frozen=True)
class Case:
    """What one framework's example agent records."""

    framework: str            # the import name whose absence skips the case
    module: str
    model: str                # the model effect's name
    checkpoints: tuple[str, ...]
    pdb_at: str               # the label of the step pdb stops at (its last occurrence)
    pdb_command: str          # evaluated there on the live state
    pdb_shows: str
    fork_at: str              # the label of the step a live fork starts after (first one)
    machinery: str = ""       # a frame local holding the framework's machinery, if any


CASES = {
    "langgraph": Case(
        "langgraph", "examples.langgraph_agent", "model.CountingModel",
        ("__start__", "agent", "tools", "agent"), "model.CountingModel",
        "p [m.type for m in state['messages']]", "['human', 'ai', 'tool', 'tool']", "tools",
        "graph"),
    "pydantic_ai": Case(
        "pydantic_ai", "examples.pydantic_ai_agent", "model.FunctionModel",
        ("UserPromptNode", "ModelRequestNode", "CallToolsNode", "ModelRequestNode",
         "CallToolsNode"), "ModelRequestNode",
        "p [m.kind for m in step_values['messages']]",
        "['request', 'response', 'request', 'response']", "CallToolsNode"),
    "openai_agents": Case(
        "agents", "examples.openai_agents_agent", "model.ScriptedModel",
        ("turn triage", "handoff triage -> roof_advisor", "turn roof_advisor",
         "turn roof_advisor"), "turn roof_advisor",
        "p step_values['items'][0].content[0].text[:24]", "'Yes: 24 C and 3 mm of ra'",
        "turn roof_advisor"),
}
CALLS = ["model", "tool get_weather", "tool read_notes"]


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, tmp_path_factory):
    case = CASES[request.param]
    if importlib.util.find_spec(case.framework) is None:
        pytest.skip(f"{case.framework} is not installed")
    agent = Agent(case.module, tmp_path_factory.mktemp(request.param))
    path = agent.home / "agent.snap"
    result = agent.record(path)
    assert result.returncode == 0, result.stderr
    assert "Plant it." in result.stdout
    assert result.stderr == ""  # no placeholder, no warning from the framework's machinery
    assert set(agent.calls()) == set(CALLS)
    return case, agent, path


def test_calls_are_effects_and_boundaries_checkpoints(case):
    case, agent, path = case
    kinds = labels(path)
    effects = [label for _, kind, label in kinds if kind == "effect"]
    assert effects.count(case.model) == agent.calls().count("model")
    assert sorted(e for e in effects if e.startswith("tool.")) == ["tool.get_weather",
                                                                    "tool.read_notes"]
    assert tuple(label for _, kind, label in kinds if kind == "checkpoint") == case.checkpoints
    assert placeholders(path) == []
    # every call is sited in the program's own code, a tool run in LangGraph's pool too
    with snap.open_timeline(path) as timeline:
        sited = {s.label: [f.function for f in s.frames] for s in timeline.runs[-1].steps
                 if s.kind == "effect"}
        assert all("run_agent" in functions for functions in sited.values()), sited
        machinery = [value for step in timeline.runs[-1].steps for frame in step.frames
                     for value in frame.locals.values() if (value.preview or {}).get("machinery")]
        assert all(len(value.repr) < 200 and "0x" not in value.repr for value in machinery)
        if case.machinery:
            last = timeline.runs[-1].steps[-1].frames[-1].locals[case.machinery]
            assert last.preview["machinery"] is True and not last.has_payload


def test_replay_serves_every_call_five_times_in_five(case):
    case, agent, path = case
    agent.reset()
    results = agent.replays(path, 5)
    assert [r and r["status"] for r in results] == ["ok"] * 5, results
    assert agent.calls() == []  # not one model or tool call ran again, parallel ones neither


def test_pdb_shows_the_live_messages(case):
    case, agent, path = case
    index = [i for i, _, label in labels(path) if label == case.pdb_at][-1]
    agent.reset()
    result, data = agent.replay(path, "--to", str(index), "--pdb",
                                input=f"{case.pdb_command}\nc\n")
    assert data is not None and data["status"] == "ok", result.stdout + result.stderr
    assert case.pdb_shows in result.stdout
    assert agent.calls() == []


def test_live_fork_runs_only_the_remaining_calls(case, tmp_path):
    case, agent, recorded = case
    path = shutil.copy(recorded, tmp_path / "fork.snap")
    index = [i for i, _, label in labels(path) if label == case.fork_at][0]
    agent.reset()
    result, data = agent.replay(path, "--to", str(index), "--live")
    assert data is not None and data["status"] == "ok", result.stdout + result.stderr
    assert agent.calls() == ["model"]  # only the answer after the tools
    with snap.open_timeline(path) as timeline:
        fork = timeline.runs[-1]
        assert (fork.parent.run_id, fork.parent.step) == (timeline.runs[0].id, index)
        assert fork.status == "finished"
    # every blob the fork's live steps name is in the file (a value whose preview differed on
    # replay, the example's argparse parser, kept the replay's preview key, never written)
    verified = agent.python("-m", "snapstate_inspect", "verify", str(path))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_resume_after_sigkill_reruns_only_the_call_in_flight(case, tmp_path):
    case, agent, _ = case
    path = tmp_path / "killed.snap"
    agent.reset()
    agent.kill_during(path, "tool get_weather")
    ran = agent.calls()
    assert set(ran) == set(CALLS) and ran.count("tool get_weather") == 1
    with snap.open_timeline(path) as timeline:
        assert timeline.runs[-1].status == "crashed"
    agent.reset()
    result = agent.python("-m", "snapstate_inspect", "resume", str(path), "--trust")
    assert result.returncode == 0, result.stdout + result.stderr
    assert agent.calls() == ["tool get_weather", "model"]  # in flight, then what came after
    with snap.open_timeline(path) as timeline:
        fork = timeline.runs[-1]
        assert fork.status == "finished"
        assert fork.steps[-1].label == case.checkpoints[-1]


def test_recorded_unchanged_under_snapstate_record(case, tmp_path):
    case, agent, _ = case
    path = tmp_path / "cli.snap"
    agent.reset()
    result = agent.record_cli(path)
    assert result.returncode == 0, result.stderr
    said = result.stderr.splitlines()
    assert len(said) == 2 and all(line.startswith("snapstate: ") for line in said), said
    assert placeholders(path) == []  # traced locals too: lists of tools are machinery
    assert set(agent.calls()) == set(CALLS)
    kinds = labels(path)
    effects = [label for _, kind, label in kinds if kind == "effect"]
    assert effects.count(case.model) == agent.calls().count("model")
    # capture turning the tracer off while it stores a step is no "tracer reinstalled" gap
    assert [step for step in kinds if step[1] == "gap"] == []
    agent.reset()
    results = agent.replays(path, 5)
    assert [r and r["status"] for r in results] == ["ok"] * 5, results
    assert agent.calls() == []
    # a traced run stops at its checkpoint and effect steps too: the framework boundary's
    # checkpoint, the live state's messages there as recorded
    index = [i for i, _, label in labels(path) if label == case.pdb_at][-1]
    result, data = agent.replay(path, "--to", str(index), "--pdb",
                                input=f"{case.pdb_command}\nc\n")
    assert data is not None and data["status"] == "ok", result.stdout + result.stderr
    assert case.pdb_shows in result.stdout, result.stdout
    (where,) = [line for line in result.stdout.splitlines() if line.startswith("> ")]
    assert "snapstate_capture" not in where, where  # the step's frame, not the integration's
    assert agent.calls() == []


def test_live_fork_under_snapstate_record_runs_only_the_remaining_calls(case, tmp_path):
    """A traced run forks at a checkpoint step (the framework boundary after the tools): the
    replay serves every call up to it, then goes on live into the fork."""
    case, agent, _ = case
    path = tmp_path / "cli.snap"
    assert agent.record_cli(path).returncode == 0
    index = [i for i, _, label in labels(path) if label == case.fork_at][0]
    agent.reset()
    result, data = agent.replay(path, "--to", str(index), "--live")
    assert data is not None and data["status"] == "ok", result.stdout + result.stderr
    assert agent.calls() == ["model"]  # only the answer after the tools
    assert "Plant it." in result.stdout
    with snap.open_timeline(path) as timeline:
        fork = timeline.runs[-1]
        assert (fork.parent.run_id, fork.parent.step) == (timeline.runs[0].id, index)
        assert fork.status == "finished"
        assert [s.label for s in fork.steps if s.kind == "checkpoint"][-1] == \
            case.checkpoints[-1]
    verified = agent.python("-m", "snapstate_inspect", "verify", str(path))
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fork_inside_a_tools_body_is_refused_naming_the_tool(name, tmp_path):
    """A traced run's call step inside a tool (``read_notes``, run in a pool thread) is in an
    effect's body, which replay serves without running: the fork is refused at once, in one
    line naming the tool's effect step.
    - LangGraph keys its calls by a lane of its own ("langgraph tool call_notes"), not the
      step's lineage: the body was not recognised, and the replay ended saying the step was
      never reached.
    - The SDK and pydantic-ai run the tool in a pool call beneath the effect's task
      (``…/p0``), one the task had not submitted yet when the replay served the effect: the
      replay waited for the stop 50-80 s, then reported a divergence.
    - pydantic-ai submits through AnyIO, whose worker threads are reused: the body's steps
      were the worker thread's, named after whichever task started it; they are the pool
      call's now, beneath the effect's task."""
    agent, path, steps = _recorded_cli(name, tmp_path)
    call = [i for i, kind, _ in steps if kind == "call" and _function(path, i) == "read_notes"][0]
    effect = [i for i, kind, label in steps if label == "tool.read_notes"][0]
    if name != "langgraph":  # the tool's body: a pool call of the effect's task
        assert _lineage(path, call).startswith(_lineage(path, effect) + "/p")
    agent.reset()
    result, _ = agent.replay(path, "--to", str(call), "--live")
    assert result.returncode == 2, result.stdout + result.stderr
    assert (f"step {call} is inside effect 'tool.read_notes' (step {effect})"
            in result.stderr), result.stderr
    assert agent.calls() == []
    # the step before the call it names (the SDK's and pydantic-ai's: in the task that
    # spawned the tool's task) is one a fork holds at
    before = int(re.search(r"a step before its call \(--to (\d+)\)", result.stderr)[1])
    assert before < call
    result, _ = agent.replay(path, "--to", str(before), "--live")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Plant it." in result.stdout


@pytest.mark.parametrize("name", ["openai_agents", "pydantic_ai"])
def test_a_fork_at_a_tool_effect_does_not_wait_for_the_other_tools_body(name, tmp_path):
    """The model asks for two tools at once; each runs in a pool call beneath its own task.
    A traced fork at the first tool's effect step has the second one in flight, served: its
    body's steps, recorded before the fork point in a pool call the replay never spawns,
    count as made. The fork waited for them until the turn wait ran out (10 s) — at the
    tool's effect step (the stop's wait for other tasks) and, in pydantic-ai, at a clock read
    of the first tool's task (the wait for other threads); with the wait made 600 s, it must
    not wait at all."""
    agent, path, steps = _recorded_cli(name, tmp_path)
    tools = [i for i, kind, label in steps if kind == "effect" and label.startswith("tool.")]
    body = [i for i, kind, _ in steps if kind == "call"
            and _function(path, i) in ("get_weather", "read_notes")]
    assert len(tools) == 2 and min(body) < tools[0]  # the other tool's body began before it
    # every effect step the other tool is in flight at (pydantic-ai's clock reads too)
    points = [i for i, kind, _ in steps if kind == "effect" and min(body) < i < tools[1]]
    assert tools[0] in points
    for point in points:
        agent.reset()
        result = agent.python("-m", "snapstate_inspect", "replay", str(path), "--trust",
                              "--to", str(point), "--live", timeout=120,
                              SNAPSTATE_TURN_WAIT="600")
        assert result.returncode == 0, (point, result.stdout + result.stderr)
        assert "Plant it." in result.stdout
        assert "model" in agent.calls()  # live after the fork


def _recorded_cli(name, tmp_path):
    """Framework ``name``'s agent recorded traced under ``snapstate record``: (agent, path,
    its steps' (index, kind, label))."""
    case = CASES[name]
    if importlib.util.find_spec(case.framework) is None:
        pytest.skip(f"{case.framework} is not installed")
    agent = Agent(case.module, tmp_path)
    path = tmp_path / "cli.snap"
    assert agent.record_cli(path).returncode == 0
    return agent, path, labels(path)


def _lineage(path, index):
    with snap.open_timeline(path) as timeline:
        return timeline.runs[-1].steps[index].lineage


def _function(path, index):
    with snap.open_timeline(path) as timeline:
        return timeline.runs[-1].steps[index].function


def test_resume_after_sigkill_under_snapstate_record_reruns_only_the_call_in_flight(
        case, tmp_path):
    case, agent, _ = case
    path = tmp_path / "killed-cli.snap"
    agent.reset()
    agent.kill_during(path, "tool get_weather", cli=True)
    ran = agent.calls()
    assert set(ran) == set(CALLS) and ran.count("tool get_weather") == 1
    with snap.open_timeline(path) as timeline:
        assert timeline.runs[-1].status == "crashed"
        assert timeline.engine.run_has_chunks(timeline.runs[-1].id)  # traced
    agent.reset()
    result = agent.python("-m", "snapstate_inspect", "resume", str(path), "--trust")
    assert result.returncode == 0, result.stdout + result.stderr
    assert agent.calls() == ["tool get_weather", "model"]  # in flight, then what came after
    assert "Plant it." in result.stdout
    with snap.open_timeline(path) as timeline:
        crashed, fork = timeline.runs
        assert fork.status == "finished" and fork.continues == crashed.id
        assert [s.label for s in fork.steps if s.kind == "checkpoint"][-1] == \
            case.checkpoints[-1]
    verified = agent.python("-m", "snapstate_inspect", "verify", str(path))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_streamed_model_calls_are_effects_replayed_chunk_by_chunk(case, tmp_path):
    """``--stream``: LangChain ``stream``, pydantic-ai ``request_stream`` (to an event
    handler), the SDK's ``stream_response`` (``Runner.run_streamed``)."""
    case, agent, _ = case
    path = tmp_path / "stream.snap"
    agent.reset()
    result = agent.record(path, "--stream")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "Plant it." in result.stdout
    assert set(agent.calls()) == set(CALLS)
    kinds = labels(path)
    effects = [label for _, kind, label in kinds if kind == "effect"]
    assert effects.count(case.model) == agent.calls().count("model")
    assert tuple(label for _, kind, label in kinds if kind == "checkpoint") == case.checkpoints
    assert placeholders(path) == []
    if case.framework == "pydantic_ai":  # the recorded stream reads as the reply it ended with
        with snap.open_timeline(path) as timeline:
            lines = [s.extra["result"].repr for s in timeline.runs[-1].steps
                     if s.kind == "effect" and s.label == case.model]
        assert lines[0] == "assistant: tool call read_notes, get_weather", lines
        assert lines[-1].startswith("assistant: Yes: 24 C"), lines
    agent.reset()
    # the program's locals (the pieces it was streamed) are compared at every step
    results = agent.replays(path, 5)
    assert [r and r["status"] for r in results] == ["ok"] * 5, results
    assert agent.calls() == []
