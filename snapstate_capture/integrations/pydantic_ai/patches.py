"""The pydantic-ai seams (see the package docstring). Each ``patch_*`` receives its module
once it is imported; a missing attribute raises ``IntegrationSkipped`` before anything is
replaced."""

from __future__ import annotations

import contextlib
import datetime as _dt
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

from ...capture import effects
from ...capture.recorder import active_recorder
from .. import messages
from ...values import machinery
from ..base import IntegrationSkipped, patch, patch_subclasses, seam
from ..calls import Key, acall_effect, begin, call_effect, journal_function, journal_uuid_module


def register_previews() -> None:
    """Agents, runs, contexts, nodes and toolsets as machinery; messages as a conversation."""
    machinery.register([
        "pydantic_ai.agent.abstract.AbstractAgent", "pydantic_ai.run.AgentRun",
        "pydantic_ai.run.AgentRunResult", "pydantic_ai._run_context.RunContext",
        "pydantic_ai.tools.RunContext", "pydantic_ai.toolsets.abstract.AbstractToolset",
        "pydantic_ai.models.Model", "pydantic_ai._agent_graph.AgentNode",
        "pydantic_ai._agent_graph.GraphAgentDeps", "pydantic_graph.nodes.GraphRunContext",
        "pydantic_ai.tool_manager.ToolManager", "pydantic_ai.tools.Tool",
        "pydantic_ai.models.StreamedResponse", "pydantic_ai.result.AgentStream",
        "pydantic_ai.result.StreamedRunResult", "pydantic_ai.result.StreamedRunResultSync",
    ], _describe)
    messages.register_previews(["pydantic_ai.messages.ModelRequest",
                                "pydantic_ai.messages.ModelResponse"])
    # a streamed request's recorded result reads as the response it ended with
    messages.register_previews([f"{__name__}.StreamedRequest"], through="response")


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

    patch_subclasses(base, "request", make_request)
    streamed = seam(module, "StreamedResponse")
    completed = seam(module, "CompletedStreamedResponse")
    patch_subclasses(streamed, "__aiter__", _make_aiter)
    patch_subclasses(base, "request_stream", lambda original: _make_stream(original, completed))


# -- streamed requests -----------------------------------------------------------------------
#: id of a stream being recorded -> (the stream, the events its consumer has seen so far);
#: by id: streamed responses are dataclasses compared by value, so not hashable.
_taps: dict[int, tuple[Any, list]] = {}


@dataclass
class StreamedRequest:
    """What a streamed model request recorded: the final ``ModelResponse`` and the events the
    program saw (``PartStartEvent``, ``PartDeltaEvent``…), served again on replay by
    pydantic-ai's own ``CompletedStreamedResponse``."""

    response: Any
    events: list


def _make_aiter(original: Callable[..., Any]) -> Callable[..., Any]:
    def __aiter__(self: Any) -> Any:  # noqa: N807 - the method's name
        iterator = original(self)
        tap = _taps.get(id(self)) if _taps else None
        if tap is None or tap[0] is not self:
            return iterator
        del _taps[id(self)]
        events = tap[1]
        tapped = _tap(iterator, events)
        try:
            self._event_iterator = tapped  # what the next ``async for`` gets too
        except AttributeError:
            pass
        return tapped
    return __aiter__


async def _tap(iterator: Any, events: list) -> Any:
    async for event in iterator:
        events.append(event)
        yield event


class _Inside:
    """An async context manager entered and left as part of an effect: the model's own work
    there (a wrapped model's stream, ids, clocks) is not an effect of its own."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    async def __aenter__(self) -> Any:
        token = effects._inside.set(True)
        try:
            return await self.manager.__aenter__()
        finally:
            effects._inside.reset(token)

    async def __aexit__(self, *exc: Any) -> Any:
        token = effects._inside.set(True)
        try:
            return await self.manager.__aexit__(*exc)
        finally:
            effects._inside.reset(token)


def _make_stream(original: Callable[..., Any], completed: Any) -> Callable[..., Any]:
    @contextlib.asynccontextmanager
    async def request_stream(self: Any, *args: Any, **kwargs: Any) -> Any:
        begun = None
        if active_recorder() is not None:
            name, key, digest = _model_call(self, args, kwargs)
            begun = begin(name, key, original, (self, *args), kwargs, digest)
        if begun is None:
            async with original(self, *args, **kwargs) as stream:
                yield stream
            return
        recorder, call = begun
        if call.served:
            recorded = call.value
            if call.outcome != "return" or not isinstance(recorded, StreamedRequest):
                effects.end_call(recorder, call)  # the recorded exception
                return
            parameters = args[2] if len(args) > 2 else kwargs.get("model_request_parameters")
            yield completed(recorded.response, model_request_parameters=parameters,
                            replay_events=list(recorded.events))
            effects.end_call(recorder, call)  # after the consumer's steps, as when recorded
            return
        events: list = []
        try:
            async with _Inside(original(self, *args, **kwargs)) as stream:
                _taps[id(stream)] = (stream, events)
                try:
                    yield stream
                finally:
                    if _taps.get(id(stream), (None,))[0] is stream:
                        del _taps[id(stream)]
                call.value = StreamedRequest(stream.get(), events)
                call.outcome = "return"
        except effects._PASS_THROUGH:
            raise
        except BaseException as exc:  # noqa: BLE001 - recorded, then re-raised by end_call
            call.outcome, call.value = "raise", exc
        effects.end_call(recorder, call)
    return request_stream


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
    """A checkpoint after every node runs: at ``AgentRun._run_node_with_hooks``, which both
    ``next`` and a run streaming to an ``event_stream_handler`` go through, else (older
    versions) at ``AgentRun.next``."""
    run_cls = seam(module, "AgentRun")
    seam(run_cls, "next")
    where = "_run_node_with_hooks" if "_run_node_with_hooks" in run_cls.__dict__ else "next"

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        async def next(self: Any, node: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A001
            recorder = active_recorder()
            if recorder is None:
                return await original(self, node, *args, **kwargs)
            result = await original(self, node, *args, **kwargs)
            graph_run = machinery.field(self, "_graph_run")
            state = machinery.field(graph_run, "state")
            history = machinery.field(state, "message_history")
            extra = {"messages": list(history) if isinstance(history, list) else history,
                     "next": type(result).__name__}
            recorder.capture("checkpoint", sys._getframe(0), label=type(node).__name__,
                             extra=extra)
            return result
        return next

    patch(run_cls, where, make)
