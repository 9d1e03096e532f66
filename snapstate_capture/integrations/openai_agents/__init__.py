"""The OpenAI Agents SDK: model calls and function tools as effects, turns as checkpoints.

Turned on when ``agents`` (the ``openai-agents`` distribution) is imported inside (or before)
a ``record`` block:

- ``Model.get_response`` and ``stream_response`` of every model class (each concrete model
  implements its own; classes defined later — a scripted test model — are patched as they
  are defined) — effect ``model.<Class>``, compared by a digest of the instructions, input
  items, tools and settings (no response ids or call ids); a stream's effect records the
  events as the run consumes them and replays them;
- function tool invocation (``agents.tool._invoke_function_tool_with_metadata``, where the
  runner calls ``FunctionTool.on_invoke_tool``) — effect ``tool.<name>`` in the lane of the
  call's ``tool_call_id``;
- ``run_single_turn`` (``run_single_turn_streamed`` for ``Runner.run_streamed``) — a
  checkpoint after every turn, labelled ``turn <agent>`` with the
  turn's new items, and one more, ``handoff <from> -> <to>``, when the turn hands off;
- the trace, span and group ids and the item ids the SDK makes (``uuid4``) — effects;
- previews: agents, runners, run contexts, tools, handoffs and results as machinery, input
  items and messages as a conversation.
"""

from __future__ import annotations

from ..base import Integration, IntegrationSkipped
from ...capture.imports import when_imported


class OpenAIAgentsIntegration(Integration):
    """The OpenAI Agents SDK integration (see module docstring)."""

    identifier = "openai_agents"
    modules = ("agents",)
    distribution = "openai-agents"
    supported = ((0, 2), 2)

    @classmethod
    def setup_once(cls) -> None:
        import sys

        found = sys.modules.get("agents")
        if found is None or not hasattr(found, "Runner") or not hasattr(found, "Agent"):
            raise IntegrationSkipped("the imported 'agents' is not the OpenAI Agents SDK")
        from . import patches

        patches.register_previews()
        when_imported("agents.models.interface", patches.patch_models)
        when_imported("agents.tool", patches.patch_tool_invocation)
        when_imported("agents.run_internal.tool_execution", patches.patch_tool_invocation)
        when_imported("agents.run", patches.patch_turns)
        when_imported("agents.run_internal.run_loop", patches.patch_streamed_turns)
        when_imported("agents.tracing.provider", patches.patch_trace_ids)
        when_imported("agents.items", patches.patch_item_ids)


__all__ = ["OpenAIAgentsIntegration"]
