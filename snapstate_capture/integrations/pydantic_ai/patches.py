"""The pydantic-ai seams (see the package docstring). Each ``patch_*`` receives its module
once it is imported; a missing attribute raises ``IntegrationSkipped`` before anything is
replaced."""

from __future__ import annotations

import datetime as _dt
import sys
import types
from typing import Any, Callable

from ...capture.recorder import active_recorder
from .. import machinery, messages
from ..base import IntegrationSkipped, patch, patch_subclasses, seam
from ..calls import Key, acall_effect, call_effect, journal_function, journal_uuid_module


def register_previews() -> None:
    """Agents, runs, contexts, nodes and toolsets as machinery; messages as a conversation."""
    machinery.register([
        "pydantic_ai.agent.abstract.AbstractAgent", "pydantic_ai.run.AgentRun",
        "pydantic_ai.run.AgentRunResult", "pydantic_ai._run_context.RunContext",
        "pydantic_ai.tools.RunContext", "pydantic_ai.toolsets.abstract.AbstractToolset",
        "pydantic_ai.models.Model", "pydantic_ai._agent_graph.AgentNode",
        "pydantic_ai._agent_graph.GraphAgentDeps", "pydantic_graph.nodes.GraphRunContext",
        "pydantic_ai.tool_manager.ToolManager", "pydantic_ai.tools.Tool",
    ], _describe)
    messages.register_previews(["pydantic_ai.messages.ModelRequest",
                                "pydantic_ai.messages.ModelResponse"])


def _describe(obj: Any) -> str:
    name = machinery.field(obj, "_name", machinery.field(obj, "name"))
    if isinstance(name, str):
        return repr(name)
    result = machinery.field(obj, "output")
    if isinstance(result, (str, int, float)):
        return f"output={machinery.text(result)}"
    tools = machinery.field(obj, "tools")
    if isinstance(tools, dict):
        return "tools=" + ",".join(map(str, tools))
    return ""


# -- library-made clocks and ids -------------------------------------------------------------
class _Clock(_dt.datetime):
    """Stands in for ``datetime`` inside ``pydantic_ai._utils``: ``now()`` is an effect."""

    @classmethod
    def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
        real = _dt.datetime.now
        if active_recorder() is None:
            return real(tz)
        return call_effect("pydantic_ai.now", Key("pydantic_ai.now_utc"), real, (tz,), {}, {})


def patch_clock_and_ids(module: types.ModuleType) -> None:
    """``now_utc`` and ``generate_tool_call_id`` (``pydantic_ai._utils``) through the journal."""
    seam(module, "now_utc")
    seam(module, "generate_tool_call_id")
    if module.__dict__.get("datetime") is not _Clock:
        if module.__dict__.get("datetime") is not _dt.datetime:
            raise IntegrationSkipped("pydantic_ai._utils no longer uses datetime.now")
        module.datetime = _Clock  # type: ignore[attr-defined]
    journal_uuid_module(module, "pydantic_ai.id", "pydantic_ai.tool_call_id")


def patch_run_ids(module: types.ModuleType) -> None:
    """The ``uuid7`` run and conversation ids (``pydantic_ai._agent_graph``) as effects."""
    journal_function(module, "uuid7", "pydantic_ai.run_id", "pydantic_ai.uuid7")


# -- models ----------------------------------------------------------------------------------
def _model_call(model: Any, args: tuple, kwargs: dict) -> tuple[str, Key, dict[str, Any]]:
    cls = type(model).__name__
    digest = {"model": cls, "messages": messages.digest(args[0] if args else
                                                        kwargs.get("messages")),
              "settings": messages.digest(args[1] if len(args) > 1 else
                                          kwargs.get("model_settings")),
              "parameters": messages.digest(args[2] if len(args) > 2 else
                                            kwargs.get("model_request_parameters"))}
    return f"model.{cls}", Key(f"pydantic_ai.model {cls}"), digest


def patch_models(module: types.ModuleType) -> None:
    """``request`` of every ``Model`` subclass as an effect."""
    base = seam(module, "Model")

    def make_request(original: Callable[..., Any]) -> Callable[..., Any]:
        async def request(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return await original(self, *args, **kwargs)
            name, key, digest = _model_call(self, args, kwargs)
            return await acall_effect(name, key, original, (self, *args), kwargs, digest)
        return request

    # ``request_stream`` is not an effect yet: a served stream needs the response-stream
    # classes, whose shape changes between pydantic-ai versions.
    patch_subclasses(base, "request", make_request)


# -- tools -----------------------------------------------------------------------------------
def patch_toolsets(module: types.ModuleType) -> None:
    """``call_tool`` of every toolset as an effect keyed by the call's ``tool_call_id``."""
    base = seam(module, "AbstractToolset")

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        async def call_tool(self: Any, name: str, tool_args: Any, ctx: Any, *args: Any,
                            **kwargs: Any) -> Any:
            if active_recorder() is None:
                return await original(self, name, tool_args, ctx, *args, **kwargs)
            call_id = machinery.field(ctx, "tool_call_id")
            lane = f"pydantic_ai tool {call_id}" if call_id else None
            return await acall_effect(
                f"tool.{name}", Key(f"pydantic_ai.tool {name}", lane), original,
                (self, name, tool_args, ctx, *args), kwargs,
                {"tool": name, "args": messages.digest(tool_args)})
        return call_tool

    patch_subclasses(base, "call_tool", make)


# -- graph nodes -----------------------------------------------------------------------------
def patch_agent_run(module: types.ModuleType) -> None:
    """A checkpoint after every node ``AgentRun.next`` runs."""
    run_cls = seam(module, "AgentRun")
    seam(run_cls, "next")

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        async def next(self: Any, node: Any) -> Any:  # noqa: A001 - the method's name
            recorder = active_recorder()
            if recorder is None:
                return await original(self, node)
            result = await original(self, node)
            graph_run = machinery.field(self, "_graph_run")
            state = machinery.field(graph_run, "state")
            history = machinery.field(state, "message_history")
            extra = {"messages": list(history) if isinstance(history, list) else history,
                     "next": type(result).__name__}
            recorder.capture("checkpoint", sys._getframe(0), label=type(node).__name__,
                             extra=extra)
            return result
        return next

    patch(run_cls, "next", make)
