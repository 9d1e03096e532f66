"""Framework machinery as short typed previews: no payload, no placeholder, not compared.

A compiled graph, an agent, a runner or a run context in a frame's locals is the framework's,
not the program's state: pickling it drags in thread pools, context variables and closures
(dozens of placeholders and capture errors per step) and comparing it on replay compares
memory. Inside another value it becomes one placeholder, without trying pickle or dill. ``register(names, describe)`` registers class names (no import) whose instances are
captured as ``{"type": ..., "repr": "<CompiledStateGraph nodes=agent,tools>", "machinery":
True}``: ``describe(obj)`` returns the text inside the brackets, read statically (instance
``__dict__`` and slots only, never a property), and must be the same in every process (no
ids, addresses or times) — replay leaves machinery out of its comparison all the same.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .preview import MACHINERY, PreviewBuilder, static_attributes
from .static import own_namespace
from .reducers import REDUCERS, Refusal
from .reprs import clip

Describe = Callable[[Any], str]

#: Characters of the description kept.
MAX_DESCRIPTION = 160


def field(obj: Any, name: str, default: Any = None) -> Any:
    """Instance attribute ``name`` of ``obj`` read statically (``__dict__`` or a slot), or
    ``default``; never runs a property or ``__getattr__``."""
    for key, value in static_attributes(obj) or ():
        if key == name:
            return value
    return default


def text(value: Any, limit: int = 40) -> str:
    """A short plain text of a name-like value (str, int, None); other types by type name."""
    if isinstance(value, str):
        return clip(value, limit)
    if value is None or isinstance(value, (int, float, bool)):
        return str(value)
    return type(value).__name__


def classes_of(packages: frozenset[str]) -> Callable[[type], bool]:
    """A ``where`` for ``register``: the classes whose own ``__module__`` is in one of
    ``packages`` — a library's own classes, not a subclass of the program's, which may hold
    state of its own and is captured as any object is. Read statically."""
    def own(cls: type) -> bool:
        try:
            module = own_namespace(cls).get("__module__")
        except (TypeError, AttributeError):
            return False
        return isinstance(module, str) and module.partition(".")[0] in packages
    return own


def register(names: Iterable[str], describe: Describe | None = None,
             where: Callable[[type], bool] | None = None) -> None:
    """Capture instances of the classes named ``names`` (``module.qualname``, subclasses
    included, or those ``where(cls)`` accepts) as machinery previews, described by
    ``describe``."""
    def handler(builder: PreviewBuilder, obj: Any, node: dict, depth: int,
                path_ids: set) -> dict:
        short = type(obj).__name__
        try:
            about = describe(obj) if describe is not None else ""
        except Exception as exc:  # noqa: BLE001 - a framework object in a state we cannot read
            about = f"({type(exc).__name__})"
        about = clip(str(about), MAX_DESCRIPTION)
        node["repr"] = f"<{short} {about}>" if about else f"<{short}>"
        node["machinery"] = True
        return node

    names = tuple(names)
    MACHINERY.register(*names, where=where)(handler)
    # Inside another value (a list of tools handed to a model) machinery is a placeholder
    # at once: never pickled part by part, never handed to dill (whose warnings about the
    # framework's generated classes would reach the program's stderr).
    REDUCERS.register(*names, where=where)(_refuse)


def _refuse(obj: Any) -> Refusal:
    return Refusal(f"framework machinery ({type(obj).__name__}): previewed, not stored")
