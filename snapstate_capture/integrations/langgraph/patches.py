"""The LangGraph / LangChain seams (see the package docstring). Each ``patch_*`` receives its
module once it is imported; a missing attribute raises ``IntegrationSkipped`` before anything
is replaced, so a LangGraph whose internals moved keeps working, unrecorded."""

from __future__ import annotations

import sys
import types
from typing import Any, Callable

from ...capture.recorder import active_recorder
from .. import messages
from ...values import machinery
from ..base import Integration, IntegrationSkipped, patch, seam
from ..calls import (Key, acall_effect, astream_effect, call_effect, journal_uuid_module,
                     stream_effect)

#: The langgraph versions this integration knows (checked by ``patch_loop``).
LANGGRAPH = ((0, 3), 2)

_MESSAGE_CLASSES = ("langchain_core.messages.base.BaseMessage",)


def register_previews() -> None:
    """Runnables (graphs, models, tools, ToolNode) as machinery; messages as a conversation."""
    machinery.register(["langchain_core.runnables.base.Runnable",
                        "langgraph.graph.state.StateGraph",
                        "langchain_core.callbacks.base.BaseCallbackManager"], _describe)
    messages.register_previews(_MESSAGE_CLASSES)


def _describe(obj: Any) -> str:
    nodes = machinery.field(obj, "nodes")
    if isinstance(nodes, dict) and nodes:
        return "nodes=" + ",".join(str(n) for n in nodes if not str(n).startswith("__"))
    name = machinery.field(obj, "name")
    if isinstance(name, str):
        return repr(name)
    tools = machinery.field(obj, "tools_by_name")
    if isinstance(tools, dict):
        return "tools=" + ",".join(map(str, tools))
    return ""


# -- where a call happens: the LangGraph node and super-step ----------------------------------
def _graph_position(config: Any) -> str | None:
    """``agent@1`` (node ``agent`` at super-step 1, with parent graphs' nodes before it as
    ``outer/agent@1``) from a runnable config's metadata, or None outside a graph."""
    if config is None:
        try:
            from langchain_core.runnables.config import var_child_runnable_config

            config = var_child_runnable_config.get()
        except (ImportError, LookupError):
            return None
    if not isinstance(config, dict):
        return None
    meta = config.get("metadata") or {}
    node, step = meta.get("langgraph_node"), meta.get("langgraph_step")
    if node is None:
        return None
    namespace = str(meta.get("langgraph_checkpoint_ns") or "")
    outer = [part.split(":", 1)[0] for part in namespace.split("|")[:-1] if part]
    return "/".join([*outer, str(node)]) + f"@{step}"


def _lane(config: Any) -> str | None:
    where = _graph_position(config)
    return f"langgraph {where}" if where else None


# -- chat models -----------------------------------------------------------------------------
def patch_chat_models(module: types.ModuleType) -> None:
    """``BaseChatModel.invoke``/``ainvoke``/``stream``/``astream`` as effects."""
    base = seam(module, "BaseChatModel")
    for name in ("invoke", "ainvoke", "stream", "astream"):
        seam(base, name)

    def model_key(model: Any, args: tuple, kwargs: dict) -> tuple[str, Key, dict[str, Any]]:
        config = kwargs.get("config", args[1] if len(args) > 1 else None)
        cls = type(model).__name__
        digest = {"model": cls, "input": messages.digest(args[0] if args else kwargs.get("input")),
                  "options": messages.digest({k: v for k, v in kwargs.items()
                                              if k not in ("config", "input")})}
        return f"model.{cls}", Key(f"langchain.model {cls}", _lane(config)), digest

    def make_sync(original: Callable[..., Any]) -> Callable[..., Any]:
        def invoke(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return original(self, *args, **kwargs)
            name, key, digest = model_key(self, args, kwargs)
            return call_effect(name, key, original, (self, *args), kwargs, digest)
        return invoke

    def make_async(original: Callable[..., Any]) -> Callable[..., Any]:
        async def ainvoke(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return await original(self, *args, **kwargs)
            name, key, digest = model_key(self, args, kwargs)
            return await acall_effect(name, key, original, (self, *args), kwargs, digest)
        return ainvoke

    def make_stream(original: Callable[..., Any]) -> Callable[..., Any]:
        def stream(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return original(self, *args, **kwargs)
            name, key, digest = model_key(self, args, kwargs)
            return stream_effect(name, key, original, (self, *args), kwargs, digest)
        return stream

    def make_astream(original: Callable[..., Any]) -> Callable[..., Any]:
        def astream(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return original(self, *args, **kwargs)
            name, key, digest = model_key(self, args, kwargs)
            return astream_effect(name, key, original, (self, *args), kwargs, digest)
        return astream

    patch(base, "invoke", make_sync)
    patch(base, "ainvoke", make_async)
    patch(base, "stream", make_stream)
    patch(base, "astream", make_astream)


# -- tools -----------------------------------------------------------------------------------
def patch_tools(module: types.ModuleType) -> None:
    """``BaseTool.run``/``arun`` as effects keyed by ``tool_call_id``."""
    base = seam(module, "BaseTool")
    seam(base, "run")
    seam(base, "arun")

    def tool_key(tool: Any, args: tuple, kwargs: dict) -> tuple[str, Key, dict[str, Any]]:
        name = str(machinery.field(tool, "name", type(tool).__name__))
        call_id = kwargs.get("tool_call_id")
        tool_input = args[0] if args else kwargs.get("tool_input")
        lane = f"langgraph tool {call_id}" if call_id else _lane(kwargs.get("config"))
        return (f"tool.{name}", Key(f"langchain.tool {name}", lane),
                {"tool": name, "input": messages.digest(tool_input)})

    def make_run(original: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return original(self, *args, **kwargs)
            name, key, digest = tool_key(self, args, kwargs)
            return call_effect(name, key, original, (self, *args), kwargs, digest)
        return run

    def make_arun(original: Callable[..., Any]) -> Callable[..., Any]:
        async def arun(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active_recorder() is None:
                return await original(self, *args, **kwargs)
            name, key, digest = tool_key(self, args, kwargs)
            return await acall_effect(name, key, original, (self, *args), kwargs, digest)
        return arun

    patch(base, "run", make_run)
    patch(base, "arun", make_arun)


# -- super-steps -----------------------------------------------------------------------------
class _LangGraph(Integration):
    """Only for the version check of the ``langgraph`` distribution itself."""

    identifier = "langgraph-core"
    distribution = "langgraph"
    supported = LANGGRAPH


def patch_loop(module: types.ModuleType) -> None:
    """A checkpoint after every super-step (``PregelLoop.after_tick``)."""
    _LangGraph.check_version()
    loop_cls = seam(module, "PregelLoop")
    seam(loop_cls, "after_tick")

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def after_tick(self: Any) -> None:
            recorder = active_recorder()
            if recorder is None:
                return original(self)
            tasks = machinery.field(self, "tasks")
            step = machinery.field(self, "step")
            try:
                original(self)
            except BaseException as exc:
                if type(exc).__name__ == "GraphInterrupt":
                    _checkpoint(recorder, self, tasks, step, interrupted=True)
                raise
            _checkpoint(recorder, self, tasks, step)
        return after_tick

    patch(loop_cls, "after_tick", make)


def _checkpoint(recorder: Any, loop: Any, tasks: Any, step: Any, *,
                interrupted: bool = False) -> None:
    names = sorted({str(getattr(t, "name", "?")) for t in (tasks or {}).values()}) \
        if isinstance(tasks, dict) else []
    label = "+".join(names) or "langgraph"
    extra: dict[str, Any] = {"state": _state(loop), "step": step}
    if interrupted:
        extra["interrupted"] = True
    recorder.capture("checkpoint", sys._getframe(1), label=label, extra=extra)


def _state(loop: Any) -> Any:
    """The graph's state channels after the super-step (empty channels left out)."""
    channels = machinery.field(loop, "channels") or {}
    keys = machinery.field(loop, "output_keys")
    if isinstance(keys, str):
        keys = [keys]
    if not isinstance(keys, (list, tuple)):
        keys = [k for k in channels if not str(k).startswith(("__", "branch:"))]
    state: dict[str, Any] = {}
    for key in keys:
        channel = channels.get(key) if isinstance(channels, dict) else None
        if channel is None:
            continue
        try:
            if hasattr(channel, "is_available") and not channel.is_available():
                continue
            state[key] = channel.get()
        except Exception:  # noqa: BLE001 - an empty channel (EmptyChannelError) is left out
            continue
    return state


# -- ids add_messages makes ------------------------------------------------------------------
def patch_message_ids(module: types.ModuleType) -> None:
    """Route ``add_messages``'s ``uuid.uuid4()`` through the journal."""
    journal_uuid_module(module, "langgraph.message_id", "langgraph.add_messages",
                        lane="langgraph ids")


# -- checkpoint ids (only once a SnapStateSaver is made) ------------------------------------
def patch_checkpoint_ids(module: types.ModuleType) -> None:
    """Route the ``uuid6`` ids of LangGraph's checkpoints (``langgraph.pregel._checkpoint``)
    through the journal."""
    from ..calls import journal_function

    journal_function(module, "uuid6", "langgraph.checkpoint_id", "langgraph.uuid6",
                     lane="langgraph checkpoint ids")
