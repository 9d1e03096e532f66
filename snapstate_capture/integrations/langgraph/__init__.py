"""LangGraph and LangChain: model and tool calls as effects, super-steps as checkpoints.

Turned on when ``langchain_core`` is imported inside (or before) a ``record`` block; every
seam is patched once, when its own module has been imported (``imports.when_imported``):

- ``BaseChatModel.invoke``/``ainvoke``/``stream``/``astream`` — effect ``model.<Class>``, in
  the lane of the LangGraph node and super-step that called it (``langgraph agent@1``),
  compared by a digest of the messages (``messages.digest``);
- ``BaseTool.run``/``arun`` — effect ``tool.<name>`` in the lane of its ``tool_call_id``, so
  parallel tool calls in ToolNode's thread pool are served by identity, not by thread;
- ``PregelLoop.after_tick`` — a checkpoint after every super-step, labelled with the nodes that
  ran (``tools``), the state's channels as the step value ``state`` and the step number;
- the ids ``add_messages`` gives messages (``uuid4``) — an effect, served on replay;
- previews: every ``Runnable`` (compiled graphs, chat models, tools, ToolNode) as machinery,
  LangChain messages as a conversation.

``SnapStateSaver`` (``saver.py``) is the checkpointer that stores LangGraph checkpoints in a
timeline file; it is imported on first use.
"""

from __future__ import annotations

from typing import Any

from ..base import Integration
from ...capture.imports import when_imported

#: Versions this integration knows: langchain-core's (the distribution checked first); langgraph's
#: is ``patches.LANGGRAPH`` (``patches.patch_loop`` checks it).
LANGCHAIN_CORE = ((0, 3), 2)


class LangGraphIntegration(Integration):
    """The LangGraph / LangChain integration (see module docstring)."""

    identifier = "langgraph"
    modules = ("langchain_core",)
    distribution = "langchain-core"
    supported = LANGCHAIN_CORE

    @classmethod
    def setup_once(cls) -> None:
        from . import patches

        patches.register_previews()
        when_imported("langchain_core.language_models.chat_models", patches.patch_chat_models)
        when_imported("langchain_core.tools.base", patches.patch_tools)
        when_imported("langgraph.pregel._loop", patches.patch_loop)
        when_imported("langgraph.graph.message", patches.patch_message_ids)


def __getattr__(name: str) -> Any:
    if name == "SnapStateSaver":
        from .saver import SnapStateSaver

        return SnapStateSaver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["LangGraphIntegration", "SnapStateSaver"]
