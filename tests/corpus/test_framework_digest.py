"""The semantic digest framework effects are compared by (issue 16): the conversation's role,
content and tool calls in the value-identity form (docs/value-identity.md), leaving out the ids
and clocks the library makes; the same in every process; journals written before still
match."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from snapstate_capture.capture.effects import arguments_match
from snapstate_capture.integrations import messages
from snapstate_capture.integrations.calls import semantic_digest
from snapstate_capture.store.hashing import canonical_json, content_hash
from tests.conftest import ROOT

pytest.importorskip("langchain_core")
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402


def _conversation(ids: str, weather: str = "24 C") -> list:
    return [HumanMessage("Plant the roof?", id=f"{ids}-1"),
            AIMessage("", id=f"{ids}-2", tool_calls=[
                {"name": "get_weather", "args": {"city": "harbour city"}, "id": f"{ids}-c"}]),
            ToolMessage(weather, tool_call_id=f"{ids}-c", name="get_weather", id=f"{ids}-3")]


def test_library_ids_do_not_count_the_conversation_does():
    first, again = semantic_digest(messages.digest(_conversation("run-a"))), \
        semantic_digest(messages.digest(_conversation("run-b")))
    assert first.startswith("i:") and first == again
    assert semantic_digest(messages.digest(_conversation("run-a", weather="31 C"))) != first


def test_functions_by_code_sets_by_members_in_any_process():
    code = ("from snapstate_capture.integrations import messages, calls\n"
            "print(calls.semantic_digest(messages.digest({'tags': {'roof', 'harbour', 'july',"
            " 'rain', 'notes', 'schools'}, 'reader': messages.summary})))")
    seen = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(ROOT),
                                           "PYTHONHASHSEED": seed}, check=True).stdout
            for seed in ("1", "2", "3")}
    assert len(seen) == 1 and next(iter(seen)).startswith("i:")
    assert messages.digest({"reader": messages.summary})["reader"] is messages.summary


def test_a_journal_written_before_value_identity_still_matches():
    plain = messages.digest(_conversation("run-a"))
    call = SimpleNamespace(args=plain, args_digest=semantic_digest(plain))
    legacy = content_hash(canonical_json(plain)).hex()
    assert arguments_match(legacy, call)
    other = messages.digest(_conversation("run-a", weather="31 C"))
    assert not arguments_match(content_hash(canonical_json(other)).hex(), call)
