"""The Agents SDK seams (see the package docstring). Each ``patch_*`` receives its module once
it is imported; a missing attribute raises ``IntegrationSkipped`` before anything is
replaced."""

from __future__ import annotations

import json
import sys
import types
from typing import Any, Callable

from ...capture.recorder import active_recorder
from .. import messages
from ...values import machinery
from ..base import patch, patch_subclasses, seam
from ..calls import Key, acall_effect, astream_effect, journal_function, journal_uuid_module


def register_previews() -> None:
    """Agents, runners, contexts, tools and results as machinery; items as a conversation."""
    machinery.register([
        "agents.agent.Agent", "agents.agent.AgentBase", "agents.run.AgentRunner",
        "agents.run_context.RunContextWrapper", "agents.tool.FunctionTool",
        "agents.handoffs.Handoff", "agents.result.RunResultBase",
        "agents.models.interface.Model", "agents.models.interface.ModelProvider",
        "agents.run_config.RunConfig", "agents.tracing.traces.Trace",
        "agents.tracing.spans.Span",
    ], _describe)
    messages.register_previews(["openai.types.responses.response_output_message."
                                "ResponseOutputMessage",
                                "openai.types.responses.response_function_tool_call."
                                "ResponseFunctionToolCall"])


def _describe(obj: Any) -> str:
    name = machinery.field(obj, "name", machinery.field(obj, "tool_name"))
    if isinstance(name, str):
        return repr(name)
    output = machinery.field(obj, "final_output")
    if isinstance(output, str):
        return f"final_output={machinery.text(output)!r}"
    return ""


# -- models ----------------------------------------------------------------------------------
_MODEL_ARGS = ("system_instructions", "input", "model_settings", "tools", "output_schema",
               "handoffs", "tracing")


def _model_digest(model: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    bound = dict(zip(_MODEL_ARGS, args))
    bound.update(kwargs)
    tools = [str(machinery.field(t, "name", type(t).__name__)) for t in bound.get("tools") or ()]
    handoffs = [str(machinery.field(h, "agent_name", machinery.field(h, "tool_name", "?")))
                for h in bound.get("handoffs") or ()]
    return {"model": type(model).__name__,
            "instructions": messages.digest(bound.get("system_instructions")),
            "input": messages.digest(bound.get("input")), "tools": tools,
            "handoffs": handoffs, "settings": messages.digest(bound.get("model_settings"))}


def patch_models(module: types.ModuleType) -> None:
    """``get_response`` of every ``Model`` subclass as an effect."""
    base = seam(module, "Model")

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        async def get_response(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return await original(self, *args, **kwargs)
            cls = type(self).__name__
            return await acall_effect(f"model.{cls}", Key(f"agents.model {cls}"), original,
                                      (self, *args), kwargs, _model_digest(self, args, kwargs))
        return get_response

    patch_subclasses(base, "get_response", make)

    def make_stream(original: Callable[..., Any]) -> Callable[..., Any]:
        def stream_response(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return original(self, *args, **kwargs)
            cls = type(self).__name__
            return astream_effect(f"model.{cls}", Key(f"agents.model {cls}"), original,
                                  (self, *args), kwargs, _model_digest(self, args, kwargs))
        return stream_response

    patch_subclasses(base, "stream_response", make_stream)


# -- function tools --------------------------------------------------------------------------
def patch_tool_invocation(module: types.ModuleType) -> None:
    """``_invoke_function_tool_with_metadata`` (in ``agents.tool`` and where the runner
    imported it) as an effect keyed by the call's ``tool_call_id``."""
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        async def invoke(*args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return await original(*args, **kwargs)
            tool, context = kwargs.get("function_tool"), kwargs.get("context")
            arguments = kwargs.get("arguments")
            name = str(machinery.field(tool, "name", "?"))
            call_id = machinery.field(context, "tool_call_id")
            try:
                parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                parsed = arguments
            return await acall_effect(
                f"tool.{name}", Key(f"agents.tool {name}",
                                    f"agents tool {call_id}" if call_id else None),
                original, args, kwargs, {"tool": name, "arguments": messages.digest(parsed)})
        return invoke

    patch(module, "_invoke_function_tool_with_metadata", make)


# -- turns and handoffs ----------------------------------------------------------------------
def patch_turns(module: types.ModuleType) -> None:
    """A checkpoint after every ``run_single_turn`` (and one per handoff); the ids
    ``agents.run`` makes with ``uuid4``."""
    patch(module, "run_single_turn", _make_turn(bindings_at=None))
    if "uuid4" in module.__dict__:
        journal_function(module, "uuid4", "agents.id", "agents.run uuid4")


def patch_streamed_turns(module: types.ModuleType) -> None:
    """The same checkpoints for a streamed run (``Runner.run_streamed``): after every
    ``run_single_turn_streamed`` of ``agents.run_internal.run_loop``."""
    patch(module, "run_single_turn_streamed", _make_turn(bindings_at=1))


def _make_turn(bindings_at: int | None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A turn function's wrapper: its agent bindings are the keyword ``bindings`` or the
    positional argument ``bindings_at``."""
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        async def run_single_turn(*args: Any, **kwargs: Any) -> Any:
            recorder = active_recorder()
            if recorder is None:
                return await original(*args, **kwargs)
            result = await original(*args, **kwargs)
            bindings = kwargs.get("bindings")
            if bindings is None and bindings_at is not None and len(args) > bindings_at:
                bindings = args[bindings_at]
            agent = machinery.field(bindings, "public_agent")
            name = str(machinery.field(agent, "name", "agent"))
            items = machinery.field(result, "new_step_items")
            next_step = machinery.field(result, "next_step")
            frame = sys._getframe(0)
            # The items' raw form (response items, tool outputs): the conversation itself,
            # without the agents each RunItem points to.
            raw = [machinery.field(item, "raw_item", item) for item in items or ()]
            recorder.capture("checkpoint", frame, label=f"turn {name}", extra={
                "items": raw, "next": type(next_step).__name__})
            new_agent = machinery.field(next_step, "new_agent")
            if new_agent is not None:
                to = str(machinery.field(new_agent, "name", "agent"))
                recorder.capture("checkpoint", frame, label=f"handoff {name} -> {to}",
                                 extra={"from": name, "to": to})
            return result
        return run_single_turn
    return make


def patch_trace_ids(module: types.ModuleType) -> None:
    """Trace, span and group ids (``agents.tracing.provider``) through the journal."""
    journal_uuid_module(module, "agents.trace_id", "agents.tracing ids")


def patch_item_ids(module: types.ModuleType) -> None:
    """The input ids of run items (``agents.items``) through the journal."""
    if "uuid4" in module.__dict__:
        journal_function(module, "uuid4", "agents.id", "agents.items uuid4")
