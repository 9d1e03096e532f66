"""A list of chat messages reads as a conversation in a variable's history: which message was
appended, by whom, calling which tool (issue 16). Previews from the committed LangGraph
sample, recorded by the real framework."""

from __future__ import annotations

import snapstate_capture as snap
from examples.make_samples import FRAMEWORK_SAMPLES, sample_path
from snapstate_inspect.model.conversation import describe_change, is_conversation
from snapstate_inspect.model.values import children
from tests.conftest import ROOT


def _conversations() -> list[dict]:
    sample = next(s for s in FRAMEWORK_SAMPLES if s.name == "langgraph_agent")
    with snap.open_timeline(sample_path(ROOT, sample)) as timeline:
        states = [step.extra["state"].preview for step in timeline.runs[-1].steps
                  if step.kind == "checkpoint"]
    return [dict(children(state))["['messages']"] for state in states]


def test_each_appended_message_is_named_by_role_and_tool():
    start, asked, answered, done = _conversations()
    assert all(is_conversation(c) for c in (start, asked, answered, done))
    assert describe_change(start, asked) == "message 1 appended (assistant: tool call " \
                                            "read_notes, get_weather)"
    two = describe_change(asked, answered)
    assert two.startswith("messages 2-3 appended (tool result read_notes: Harbour city field")
    assert "; tool result get_weather: {" in two
    assert describe_change(answered, done).startswith("message 4 appended (assistant: Yes: 24 C")
    assert describe_change(done, answered) == "message 4 removed"


def test_not_a_conversation_falls_back():
    start, asked, _, _ = _conversations()
    numbers = {"type": "builtins.list", "repr": "[1, 2]", "len": 2,
               "children": [["[0]", {"type": "builtins.int", "repr": "1"}],
                            ["[1]", {"type": "builtins.int", "repr": "2"}]]}
    assert describe_change(numbers, asked) is None
    assert describe_change(asked, numbers) is None
    assert not is_conversation({"type": "builtins.list", "repr": "[]", "len": 0})
    empty = {"type": "builtins.list", "repr": "[]", "len": 0, "children": []}
    assert describe_change(empty, start).startswith("message 0 appended (user: Is this")
