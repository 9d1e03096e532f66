"""Chat messages read as a conversation, and their semantic digest.

``facts(message)`` reads one chat message — a LangChain ``BaseMessage``, a pydantic-ai
``ModelRequest``/``ModelResponse``, an OpenAI-style or Responses-API dict — statically
(instance ``__dict__``, slots, dict items; never a property) into::

    {"role": "assistant", "content": "…", "tool_calls": [{"name": "read_notes",
     "args": {...}, "id": "call_1"}], "tool_results": [{"name": …, "id": …, "content": …}]}

(keys without content left out), or None for anything else. ``summary(facts)`` is the one line
the inspector shows (``assistant: tool call read_notes``). ``register_previews(names)`` makes
the previews of those message classes carry ``"message": facts`` and that line as their repr.

``digest(value)`` is what effect arguments are compared by on replay: the value with every
library-made id, timestamp and run id left out (keys named ``id``, ``*_id``, ``timestamp``,
``created_at``…), objects read statically into their fields, bounded in depth; functions,
classes and modules are kept as they are. Its value identity (``calls.semantic_digest``:
functions by name and code, sets by members — docs/value-identity.md) is the digest compared.
"""

from __future__ import annotations

import types
from typing import Any, Iterable

from ..values.identity import identity
from ..values.preview import PREVIEWS, PreviewBuilder, static_attributes
from ..values.reprs import clip

_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system",
          "AIMessageChunk": "assistant", "chat": "chat", "function": "tool",
          "developer": "system"}
#: Keys a digest leaves out: made by the library or the clock, not by the conversation.
_NOISE = frozenset({"id", "timestamp", "created_at", "created", "run_id", "response_id",
                    "provider_response_id", "tool_call_id", "call_id", "trace_id", "span_id",
                    "conversation_id", "usage", "usage_metadata", "response_metadata",
                    "provider_details", "lc_attributes"})
_MAX_DEPTH = 8


def _fields(obj: Any) -> dict[str, Any]:
    if type(obj) is dict:
        return obj
    return dict(static_attributes(obj) or ())


def _text(content: Any) -> str | None:
    """Text of a message content: a string, or the text parts of a list of blocks."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        pieces = []
        for block in content:
            if isinstance(block, str):
                pieces.append(block)
                continue
            fields = _fields(block)
            piece = fields.get("text") or fields.get("content")
            if isinstance(piece, str):
                pieces.append(piece)
        return "".join(pieces)
    return None


def _langchain(fields: dict[str, Any]) -> dict[str, Any] | None:
    kind = fields.get("type")
    if kind not in _ROLES or "content" not in fields:
        return None
    out: dict[str, Any] = {"role": _ROLES[kind], "content": _text(fields.get("content")) or ""}
    calls = [{"name": c.get("name"), "args": c.get("args"), "id": c.get("id")}
             for c in fields.get("tool_calls") or () if isinstance(c, dict)]
    if calls:
        out["tool_calls"] = calls
    if kind == "tool":
        out["tool_results"] = [{"name": fields.get("name"), "id": fields.get("tool_call_id"),
                                "content": out["content"]}]
    return out


def _pydantic_ai(fields: dict[str, Any]) -> dict[str, Any] | None:
    kind, parts = fields.get("kind"), fields.get("parts")
    if kind not in ("request", "response") or not isinstance(parts, (list, tuple)):
        return None
    texts, calls, results, roles = [], [], [], []
    for part in parts:
        pf = _fields(part)
        pk = pf.get("part_kind")
        if pk in ("tool-call", "builtin-tool-call"):
            calls.append({"name": pf.get("tool_name"), "args": pf.get("args"),
                          "id": pf.get("tool_call_id")})
        elif pk in ("tool-return", "builtin-tool-return"):
            results.append({"name": pf.get("tool_name"), "id": pf.get("tool_call_id"),
                            "content": pf.get("content")})
            roles.append("tool")
        elif pk == "retry-prompt":
            results.append({"name": pf.get("tool_name"), "id": pf.get("tool_call_id"),
                            "content": f"retry: {clip(str(pf.get('content')), 200)}"})
            roles.append("tool")
        elif pk in ("system-prompt", "user-prompt", "text", "thinking"):
            text = _text(pf.get("content"))
            if text:
                texts.append(text)
            roles.append({"system-prompt": "system", "user-prompt": "user"}.get(pk, "assistant"))
    role = "assistant" if kind == "response" else (
        "user" if "user" in roles else roles[0] if roles else "user")
    out: dict[str, Any] = {"role": role, "content": "\n".join(texts)}
    if calls:
        out["tool_calls"] = calls
    if results:
        out["tool_results"] = results
    return out


def _openai(fields: dict[str, Any]) -> dict[str, Any] | None:
    kind = fields.get("type")
    if kind == "function_call":
        return {"role": "assistant", "content": "", "tool_calls": [
            {"name": fields.get("name"), "args": fields.get("arguments"),
             "id": fields.get("call_id")}]}
    if kind == "function_call_output":
        return {"role": "tool", "content": _text(fields.get("output")) or "",
                "tool_results": [{"name": None, "id": fields.get("call_id"),
                                  "content": fields.get("output")}]}
    role = fields.get("role")
    if not isinstance(role, str) or role not in ("user", "assistant", "system", "tool",
                                                 "developer"):
        return None
    out: dict[str, Any] = {"role": _ROLES.get(role, role),
                           "content": _text(fields.get("content")) or ""}
    calls = []
    for call in fields.get("tool_calls") or ():
        function = _fields(_fields(call).get("function") or {})
        calls.append({"name": function.get("name"), "args": function.get("arguments"),
                      "id": _fields(call).get("id")})
    if calls:
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_results"] = [{"name": fields.get("name"), "id": fields.get("tool_call_id"),
                                "content": out["content"]}]
    return out


def facts(message: Any) -> dict[str, Any] | None:
    """The conversation facts of one chat message (see module docstring), or None."""
    try:
        fields = _fields(message)
    except Exception:  # noqa: BLE001 - not a message we can read
        return None
    if not fields:
        return None
    if type(message) is not dict:
        found = _langchain(fields) or _pydantic_ai(fields)
        if found is not None:
            return found
        # Responses-API items as pydantic models (the Agents SDK's output items)
        return _openai(fields) if "type" in fields or "role" in fields else None
    return _openai(fields)


def summary(found: dict[str, Any], limit: int = 80) -> str:
    """One line: ``assistant: tool call read_notes, fetch_url`` / ``tool result read_notes:
    …`` / ``user: What is…``."""
    role = found.get("role", "?")
    calls = found.get("tool_calls")
    if calls:
        return f"{role}: tool call {', '.join(str(c.get('name')) for c in calls)}"
    results = found.get("tool_results")
    if results and role == "tool":
        names = ", ".join(str(r.get("name")) for r in results if r.get("name"))
        content = clip(" ".join(str(r.get("content")) for r in results).replace("\n", " "),
                       limit)
        return f"tool result{' ' + names if names else ''}: {content}"
    content = clip(str(found.get("content") or "").replace("\n", " "), limit)
    return f"{role}: {content}"


def register_previews(names: Iterable[str], through: str | None = None) -> None:
    """Previews of the message classes ``names`` (by ``module.qualname``, subclasses too)
    carry ``"message": facts`` and ``summary`` as their repr; their fields stay children.
    ``through``: the classes hold a message in that attribute (a recorded stream's final
    response), whose facts and line they show."""
    def handler(builder: PreviewBuilder, obj: Any, node: dict, depth: int,
                path_ids: set) -> dict | None:
        held = obj if through is None else dict(static_attributes(obj) or ()).get(through)
        found = facts(held)
        if found is None:
            return None
        node["message"] = _bounded(found, builder.options.max_string)
        items = [(f".{k}", v) for k, v in static_attributes(obj) or () if not k.startswith("_")]
        return builder.fill_children(node, obj, items, None, depth, path_ids,
                                     repr_text=summary(found))

    PREVIEWS.register(*names)(handler)


def _bounded(found: dict[str, Any], limit: int) -> dict[str, Any]:
    """``facts`` made JSON-safe and bounded for a preview."""
    def plain(value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            return clip(value, limit)
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if depth > 3:
            return clip(repr(type(value).__name__), 40)
        if isinstance(value, dict):
            return {str(k): plain(v, depth + 1) for k, v in list(value.items())[:20]}
        if isinstance(value, (list, tuple)):
            return [plain(v, depth + 1) for v in list(value)[:20]]
        return clip(type(value).__name__, 60)
    return plain(found)


def digest(value: Any, depth: int = 0) -> Any:
    """Plain data standing for ``value`` in an effect's compared arguments (module
    docstring): library-made ids and clocks left out, objects as their fields."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return ["bytes", bytes(value[:4096]).hex()]
    if depth > _MAX_DEPTH:
        return type(value).__qualname__
    if isinstance(value, dict):
        return {str(k): digest(v, depth + 1) for k, v in value.items()
                if not _is_noise(k)}
    if isinstance(value, (list, tuple)):
        return [digest(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        # by members, in the order of their identity digests: the same under any hash seed
        return ["set", sorted((digest(v, depth + 1) for v in value),
                              key=lambda member: identity(member) or "")]
    if isinstance(value, _BY_IDENTITY):
        return value  # by module, qualified name and code (docs/value-identity.md)
    cls = type(value)
    name = f"{cls.__module__}.{cls.__qualname__}"
    if name.startswith("datetime."):
        return name
    fields = static_attributes(value)
    if fields is None:
        enum_value = getattr(value, "_value_", None)
        if enum_value is not None:
            return [name, digest(enum_value, depth + 1)]
        return [name, str(value)] if name.startswith("uuid.") else name
    return [name, {k: digest(v, depth + 1) for k, v in fields
                   if not k.startswith("_") and not _is_noise(k)}]


#: Values a digest keeps as they are: their value identity is their name and code.
_BY_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
                types.ModuleType, staticmethod, classmethod, property)


def _is_noise(key: Any) -> bool:
    return isinstance(key, str) and (key in _NOISE or key.endswith("_id"))
