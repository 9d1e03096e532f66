"""The committed framework samples (``examples/make_samples.py`` ``FRAMEWORK_SAMPLES``) open
with the current code and show what the README says: effects for every model and tool call,
a checkpoint at every framework boundary, messages as a conversation, no placeholder."""

from __future__ import annotations

import pytest

import snapstate_capture as snap
from examples.make_samples import FRAMEWORK_SAMPLES, sample_path
from tests.conftest import ROOT, run_cli
from tests.corpus.frameworks import placeholders

SHOWN = {
    "langgraph_agent": ("model.CountingModel", ["__start__", "agent", "tools", "agent"]),
    "pydantic_ai_agent": ("model.FunctionModel", ["UserPromptNode", "ModelRequestNode",
                                                  "CallToolsNode", "ModelRequestNode",
                                                  "CallToolsNode"]),
    "openai_agents_agent": ("model.ScriptedModel", ["turn triage",
                                                    "handoff triage -> roof_advisor",
                                                    "turn roof_advisor", "turn roof_advisor"]),
}


@pytest.mark.parametrize("sample", FRAMEWORK_SAMPLES, ids=lambda s: s.name)
def test_framework_sample_shows_effects_checkpoints_and_messages(sample):
    path = sample_path(ROOT, sample)
    model, checkpoints = SHOWN[sample.name]
    with snap.open_timeline(path) as timeline:
        run = timeline.runs[-1]
        assert run.status == "finished"
        steps = list(run.steps)
        effects = [s.label for s in steps if s.kind == "effect"]
        assert effects.count(model) == (3 if sample.name == "openai_agents_agent" else 2)
        assert {"tool.read_notes", "tool.get_weather"} <= set(effects)
        assert [s.label for s in steps if s.kind == "checkpoint"] == checkpoints
        model_steps = [s for s in steps if s.label == model]
        reply = model_steps[0].extra["result"]
        if sample.name != "openai_agents_agent":
            assert reply.repr == "assistant: tool call read_notes, get_weather"
    assert placeholders(path) == []


@pytest.mark.parametrize("sample", FRAMEWORK_SAMPLES, ids=lambda s: s.name)
def test_framework_sample_replays_with_the_installed_framework(sample, tmp_path):
    """What a user of the README does with a sample — replay it — holds with the framework
    versions the ``test`` extra installs today. A framework release that changes what its
    model calls are given (pydantic-ai-slim 2.78 added ``deferred_capabilities``) fails here:
    record the samples again (``python -m examples.make_samples``)."""
    path = sample_path(ROOT, sample)
    with snap.open_timeline(path) as timeline:
        steps = len(timeline.runs[-1].steps)
    done = run_cli("replay", str(path), "--trust", cwd=tmp_path, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"replayed {steps} steps, no divergence" in done.stdout
