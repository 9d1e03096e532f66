"""Framework integrations: zero-glue recording and replay of agents built on a framework.

Each integration teaches capture one framework (DESIGN.md "integration"): its model and tool
calls become effects keyed by the framework's logical identity, its boundaries become
checkpoints, and its machinery (compiled graphs, agents, runners, contexts) is captured as a
short typed preview left out of replay's comparison.

=================  ==========================  ========================================
identifier         turned on by importing      extra
=================  ==========================  ========================================
``langgraph``      ``langchain_core``          ``snapstate[langgraph]``
``pydantic_ai``    ``pydantic_ai``             ``snapstate[pydantic-ai]``
``openai_agents``  ``agents`` (the Agents SDK) ``snapstate[openai-agents]``
=================  ==========================  ========================================

``snap.record(path)`` turns every integration on for the frameworks the program imports —
already, or later inside the block (``imports.when_imported``) — so ``snapstate record``
needs no code change; ``snap.record(path, integrations=["langgraph"])`` chooses, and
``integrations=()`` turns them off. An integration module is imported only when its framework
is. Patches stay in place once made (each is a pass-through outside a ``record`` block).
"""

from __future__ import annotations

import importlib
from typing import Any, Iterable

from ..capture import imports
from ..capture.hooks import add_record_hooks

#: identifier -> (the module whose import turns it on, our module, its Integration class).
KNOWN: dict[str, tuple[str, str, str]] = {
    "langgraph": ("langchain_core", ".langgraph", "LangGraphIntegration"),
    "pydantic_ai": ("pydantic_ai", ".pydantic_ai", "PydanticAIIntegration"),
    "openai_agents": ("agents", ".openai_agents", "OpenAIAgentsIntegration"),
}

#: Notes of integrations that were skipped (identifier -> why), for ``snapstate show``/tests.
notes: dict[str, str] = {}


def chosen(integrations: Any) -> list[str]:
    """The identifiers ``record(..., integrations=...)`` asks for: None means all known ones;
    names may use ``-`` or ``_`` (``"pydantic-ai"``). Raises ``ValueError`` for an unknown
    name."""
    if integrations is None:
        return list(KNOWN)
    if isinstance(integrations, str):
        integrations = [integrations]
    out = []
    for name in integrations:
        ident = str(getattr(name, "identifier", name)).replace("-", "_")
        if ident not in KNOWN:
            raise ValueError(f"unknown integration {name!r} (known: {', '.join(KNOWN)})")
        out.append(ident)
    return out


def enable(identifiers: Iterable[str]) -> None:
    """Set up each integration now if its framework is imported, else when it is. Never
    raises."""
    for ident in identifiers:
        trigger = KNOWN[ident][0]
        imports.when_imported(trigger, lambda _module, ident=ident: setup(ident))


def setup(identifier: str) -> str:
    """Import our module for ``identifier`` and run its ``setup`` (once); the status."""
    _, module, cls_name = KNOWN[identifier]
    cls = getattr(importlib.import_module(module, __name__), cls_name)
    status = cls.setup()
    if status.startswith("skipped"):
        notes[identifier] = status
    return status


def disable_pending() -> None:
    """Stop waiting for frameworks not imported yet (the last ``record`` block ended)."""
    imports.stop()


def _on_record_start(block: Any) -> None:
    enable(chosen(getattr(block, "integrations", None)))


def _on_record_end(block: Any) -> None:
    from ..capture.recorder import active_recorder

    if active_recorder() is None:
        disable_pending()


def _check(block: Any) -> None:
    chosen(getattr(block, "integrations", None))


add_record_hooks(_on_record_start, _on_record_end, _check)
