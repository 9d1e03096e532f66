"""The ``Integration`` base: one per agent framework, set up once, never breaking the framework.

An integration names the framework (``identifier``), the modules whose import turns it on
(``modules``: the first one imported, or already imported, triggers ``setup``), the
distribution whose version it checks and the versions it knows (``supported``). ``setup_once``
patches the framework's narrowest stable seams; it runs at most once per process, and a
framework whose internals moved (an attribute gone, a version outside ``supported``) is left
untouched with one note saying so — recording goes on without that integration.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, ClassVar

#: Attribute set on every function a patch replaced: the original, for idempotence and undo.
WRAPPED = "__snapstate_wrapped__"


class IntegrationSkipped(Exception):
    """Raised by ``setup_once`` when the installed framework cannot be patched safely; the
    message says why (it becomes the integration's note)."""


class Integration:
    """Base class of the framework integrations (see module docstring).

    Subclasses set ``identifier`` (``"langgraph"``), ``modules`` (import names that trigger
    it), ``distribution`` (the PyPI name whose version is checked) and ``supported`` (the
    lowest major.minor known to work, inclusive, and the first major not known, exclusive),
    and implement ``setup_once``.
    """

    identifier: ClassVar[str] = ""
    modules: ClassVar[tuple[str, ...]] = ()
    distribution: ClassVar[str] = ""
    supported: ClassVar[tuple[tuple[int, int], int]] = ((0, 0), 999)

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _state: ClassVar[dict[str, str]] = {}  # identifier -> "on" | "skipped: why"

    @classmethod
    def setup_once(cls) -> None:  # pragma: no cover - every subclass overrides it
        """Patch the framework; raise ``IntegrationSkipped`` to leave it alone."""
        raise NotImplementedError

    @classmethod
    def triggered(cls) -> bool:
        """True when one of ``modules`` is imported in this process."""
        return any(name in sys.modules for name in cls.modules)

    @classmethod
    def status(cls) -> str | None:
        """``"on"``, ``"skipped: why"``, or None when never set up in this process."""
        return cls._state.get(cls.identifier)

    @classmethod
    def setup(cls) -> str:
        """Run ``setup_once`` the first time (later calls return the first answer); never
        raises. Returns the status (``"on"`` or ``"skipped: why"``)."""
        with cls._lock:
            done = cls._state.get(cls.identifier)
            if done is not None:
                return done
            try:
                cls.check_version()
                cls.setup_once()
                status = "on"
            except IntegrationSkipped as exc:
                status = f"skipped: {exc}"
            except Exception as exc:  # noqa: BLE001 - a framework we cannot read is left alone
                status = f"skipped: {type(exc).__name__}: {exc}"
            cls._state[cls.identifier] = status
            return status

    @classmethod
    def version(cls) -> tuple[int, ...] | None:
        """The installed distribution's version as integers (None when unknown)."""
        from importlib import metadata

        try:
            text = metadata.version(cls.distribution)
        except metadata.PackageNotFoundError:
            return None
        parts: list[int] = []
        for piece in text.split("."):
            digits = "".join(ch for ch in piece if ch.isdigit()) if piece else ""
            if not digits or not piece[0].isdigit():
                break
            parts.append(int(digits))
        return tuple(parts) or None

    @classmethod
    def check_version(cls) -> None:
        """Raise ``IntegrationSkipped`` when the installed version is outside ``supported``."""
        found = cls.version()
        if found is None:
            return  # an unpackaged checkout: the attribute checks of setup_once decide
        (low_major, low_minor), high_major = cls.supported
        if found[:2] < (low_major, low_minor) or found[0] >= high_major:
            shown = ".".join(map(str, found))
            raise IntegrationSkipped(
                f"{cls.distribution} {shown} is not a version this integration knows "
                f"({low_major}.{low_minor} up to {high_major - 1}.x)")


def seam(owner: Any, name: str) -> Callable[..., Any]:
    """The function at ``owner.name`` to patch; raises ``IntegrationSkipped`` when the
    framework has no such attribute (its internals moved)."""
    found = owner.__dict__.get(name) if isinstance(getattr(owner, "__dict__", None), dict) \
        else None
    if found is None:
        found = getattr(owner, name, None)
    if not callable(found) and not isinstance(found, (staticmethod, classmethod)):
        raise IntegrationSkipped(f"{getattr(owner, '__qualname__', owner)!s} has no {name}")
    return found


def patch(owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]
          ) -> None:
    """Replace ``owner.name`` with ``make(original)`` once (a second call is a no-op).

    Raises ``IntegrationSkipped`` when ``owner`` has no ``name``.
    """
    original = seam(owner, name)
    if getattr(original, WRAPPED, None) is not None:
        return
    wrapper = make(original)
    try:
        import functools

        functools.update_wrapper(wrapper, original)
    except (AttributeError, TypeError):
        pass
    setattr(wrapper, WRAPPED, original)
    setattr(owner, name, wrapper)


def patch_subclasses(base: type, name: str,
                     make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Patch ``name`` on ``base`` and on every subclass that defines its own ``name`` — now
    and, through ``__init_subclass__``, for subclasses defined later (a framework's abstract
    ``Model.request`` is implemented by each concrete model). Idempotent."""
    seam(base, name)

    def wrap(cls: type) -> None:
        if name in cls.__dict__:
            try:
                patch(cls, name, make)
            except IntegrationSkipped:
                pass

    todo = [base]
    while todo:
        cls = todo.pop()
        wrap(cls)
        todo.extend(cls.__subclasses__())
    current = base.__dict__.get("__init_subclass__")
    if getattr(getattr(current, "__func__", current), WRAPPED, None) is not None:
        return
    previous = base.__dict__.get("__init_subclass__")

    def __init_subclass__(cls: type, **kwargs: Any) -> None:  # noqa: N807
        if previous is not None:
            previous.__func__(cls, **kwargs)  # type: ignore[union-attr]
        else:
            super(base, cls).__init_subclass__(**kwargs)
        wrap(cls)

    hook = classmethod(__init_subclass__)
    setattr(__init_subclass__, WRAPPED, previous or True)
    base.__init_subclass__ = hook  # type: ignore[assignment]
