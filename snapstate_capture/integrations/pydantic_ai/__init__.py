"""pydantic-ai: model requests and tool calls as effects, graph nodes as checkpoints.

Turned on when ``pydantic_ai`` is imported inside (or before) a ``record`` block:

- ``Model.request`` and ``request_stream`` of every model class (each concrete model
  implements its own; classes defined later are patched as they are defined) — effect
  ``model.<Class>``, compared by a digest of the messages (no timestamps, run ids or
  tool-call ids); a stream's effect spans the program's ``async with``, records the events
  the program saw and the final response, and is served on replay by pydantic-ai's
  ``CompletedStreamedResponse`` replaying those events;
- ``AbstractToolset.call_tool`` of every toolset (the outermost call is the effect, the
  toolsets it delegates to run inside it) — effect ``tool.<name>`` in the lane of the call's
  ``tool_call_id``;
- ``AgentRun._run_node_with_hooks`` (``AgentRun.next`` in older versions) — a checkpoint
  after every graph node (``agent.run``/``run_sync``, ``agent.iter`` and a run streaming to an
  ``event_stream_handler`` all go through it), labelled with the node (``ModelRequestNode``), the
  message history as the step value ``messages``;
- the run ids (``uuid7``), tool-call ids and timestamps (``now_utc``) the library makes —
  effects, served on replay;
- previews: agents, runs, run contexts, graph nodes and toolsets as machinery, messages as a
  conversation.
"""

from __future__ import annotations

from ..base import Integration
from ...capture.imports import when_imported


class PydanticAIIntegration(Integration):
    """The pydantic-ai integration (see module docstring)."""

    identifier = "pydantic_ai"
    modules = ("pydantic_ai",)
    distribution = "pydantic-ai-slim"
    supported = ((1, 0), 3)

    @classmethod
    def setup_once(cls) -> None:
        from . import patches

        patches.register_previews()
        when_imported("pydantic_ai._utils", patches.patch_clock_and_ids)
        when_imported("pydantic_ai._agent_graph", patches.patch_run_ids)
        when_imported("pydantic_ai.models", patches.patch_models)
        when_imported("pydantic_ai.toolsets.abstract", patches.patch_toolsets)
        when_imported("pydantic_ai.run", patches.patch_agent_run)


__all__ = ["PydanticAIIntegration"]
