"""A list of chat messages read as a conversation: what one change did to it (UI-free).

Message previews carry ``"message": {"role", "content", "tool_calls", "tool_results"}``
(``snapstate_capture.integrations.messages``) and a one-line repr (``assistant: tool call
read_notes``). ``describe_change(old, new)`` says what happened between two previews of such a
list in the words of a conversation — ``message 4 appended (assistant: tool call read_notes)``,
``messages 2-3 appended (tool result read_notes: …; tool result get_weather: …)``, ``message 1
changed (…)``, ``messages 5-6 removed`` — instead of two list reprs that start alike. It returns
None when either preview is not a list of messages, so callers fall back to ``old → new``.
"""

from __future__ import annotations

from typing import Any

from .values import children

#: Summaries of this many characters at most per message in a description.
SUMMARY = 80


def is_conversation(preview: Any) -> bool:
    """True for a list preview whose shown children are all chat messages (at least one)."""
    if not isinstance(preview, dict) or preview.get("type") not in ("builtins.list",
                                                                   "builtins.tuple"):
        return False
    kids = children(preview)
    return bool(kids) and all(isinstance(node.get("message"), dict) for _, node in kids)


def _summary(node: dict[str, Any]) -> str:
    text = str(node.get("repr", ""))
    return text if len(text) <= SUMMARY else text[:SUMMARY - 1] + "…"


def _length(preview: dict[str, Any]) -> int:
    length = preview.get("len")
    return length if isinstance(length, int) else len(children(preview))


def _span(first: int, last: int) -> str:
    return f"message {first}" if first == last else f"messages {first}-{last}"


def describe_change(old: Any, new: Any) -> str | None:
    """What happened to a conversation between previews ``old`` and ``new`` (module
    docstring); None when they are not both lists of messages (an empty ``old`` list counts)."""
    if not is_conversation(new) or not isinstance(old, dict):
        return None
    if not is_conversation(old) and children(old):
        return None
    before = {label: node for label, node in children(old)}
    after = list(children(new))
    n_old, n_new = _length(old), _length(new)
    changed = [(label, node) for label, node in after[:n_old]
               if label in before and before[label] != node]
    parts = []
    for label, node in changed[:3]:
        parts.append(f"message {label.strip('[]')} changed ({_summary(node)})")
    if n_new > n_old:
        shown = [node for _, node in after[n_old:]]
        what = "; ".join(_summary(node) for node in shown[:3])
        if len(shown) > 3:
            what += f"; … {len(shown) - 3} more"
        parts.append(f"{_span(n_old, n_new - 1)} appended" + (f" ({what})" if what else ""))
    elif n_new < n_old:
        parts.append(f"{_span(n_new, n_old - 1)} removed")
    return ", ".join(parts) if parts else None
