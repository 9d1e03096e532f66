"""Type registries: custom handling per type, in the manner of dill's ``@register(type)``.

A ``TypeRegistry`` maps classes to handlers. Handlers are registered either for a class object
(``@PREVIEWS.register(memoryview)``) or, for classes of optional libraries, by their dotted name
(``@PREVIEWS.register("numpy.ndarray")``): a name costs no import, and it can only ever match an
object whose class is already loaded, so registering numpy support never imports numpy.

``lookup(cls)`` walks ``cls.__mro__`` and returns the first handler found (so a subclass of a
registered class gets its handler), caching the answer per class in a weak dictionary (classes
created inside functions are not kept alive by the cache).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Generic, TypeVar

H = TypeVar("H", bound=Callable[..., Any])

_MISSING = object()


def class_name(cls: type) -> str:
    """``module.qualname`` of a class, read from the class itself (no instance code runs)."""
    module = cls.__dict__.get("__module__") if isinstance(cls.__dict__, dict) else None
    if not isinstance(module, str):
        module = getattr(cls, "__module__", None) or "?"
    qualname = getattr(cls, "__qualname__", None) or cls.__name__
    return f"{module}.{qualname}"


class TypeRegistry(Generic[H]):
    """Handlers by class, with MRO lookup and lazily-matched class names.

    ``register(*keys)`` is a decorator; each key is a class or a dotted ``module.qualname``
    string (matched against each class of an object's MRO). Registering again for the same key
    replaces the handler. ``lookup(cls)`` returns the handler or None.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._by_type: dict[type, H] = {}
        self._by_name: dict[str, H] = {}
        self._cache: weakref.WeakKeyDictionary[type, H | None] = weakref.WeakKeyDictionary()
        self._where: dict[type | str, Callable[[type], bool]] = {}

    def register(self, *keys: type | str,
                 where: Callable[[type], bool] | None = None) -> Callable[[H], H]:
        """Decorator: register the decorated handler for every class or class name in ``keys``.
        ``where(cls)``: a class found through one of these keys (itself or a subclass) gets the
        handler only when it says so, else no handler at all (a subclass of the program's own
        may add state the handler does not show)."""
        def decorate(handler: H) -> H:
            for key in keys:
                if isinstance(key, str):
                    self._by_name[key] = handler
                else:
                    self._by_type[key] = handler
                if where is not None:
                    self._where[key] = where
                else:
                    self._where.pop(key, None)
            self._cache = weakref.WeakKeyDictionary()
            return handler
        return decorate

    def lookup(self, cls: type) -> H | None:
        """Return the handler for ``cls`` (first match along its MRO), or None."""
        try:
            found = self._cache.get(cls, _MISSING)
        except TypeError:  # a class that cannot be weakly referenced
            return self._find(cls)
        if found is _MISSING:
            found = self._find(cls)
            try:
                self._cache[cls] = found
            except TypeError:
                return found  # not weak-referenceable: looked up again next time, still correct
        return found  # type: ignore[return-value]

    def _find(self, cls: type) -> H | None:
        for klass in getattr(cls, "__mro__", (cls,)):
            handler = self._by_type.get(klass)
            if handler is not None:
                return self._allowed(klass, cls, handler)
            if self._by_name:
                name = class_name(klass)
                handler = self._by_name.get(name)
                if handler is not None:
                    return self._allowed(name, cls, handler)
        return None

    def _allowed(self, key: type | str, cls: type, handler: H) -> H | None:
        where = self._where.get(key)
        return handler if where is None or where(cls) else None


#: Types captured as their preview alone — framework machinery (compiled graphs, agents,
#: runners, run contexts, HTTP and model-API clients): no payload, no placeholder, no capture
#: error, and the preview carries ``"machinery": True`` so replay leaves it out of the
#: comparison. Its handlers are preview handlers (``values/machinery.py`` registers them by
#: class name). Defined here rather than in ``preview.py`` so that ``identity.py`` can ask it.
MACHINERY: TypeRegistry[Any] = TypeRegistry("machinery")
