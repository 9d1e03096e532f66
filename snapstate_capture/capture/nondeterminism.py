"""``patch_nondeterminism``: the standard sources of nondeterminism routed through the journal.

While a ``record(..., patch_nondeterminism=True)`` block (or ``snapstate record
--patch-nondeterminism``) runs, these become effects, whoever calls them — the program, or a
library it uses (a framework's ``uuid4`` ids and ``datetime.now`` timestamps):

- ``time``: ``time``, ``time_ns``, ``monotonic``, ``perf_counter``, ``process_time``,
  ``thread_time`` (and their ``_ns`` forms), and ``localtime``, ``gmtime``, ``ctime``,
  ``asctime``, ``strftime`` when called without a time (they read the clock then);
- ``datetime.datetime.now``, ``datetime.datetime.utcnow``, ``datetime.date.today`` (so also
  ``datetime.datetime.today``): patched on the classes themselves, so ``from datetime import
  datetime`` done earlier is covered too (CPython; elsewhere they are left alone);
- ``random``'s module functions (the shared generator; ``random.seed()`` without a seed);
- a ``random.Random()`` made without a seed (or reseeded with none): the seed the operating
  system would give it is effect ``random.Random.seed``, so a library's own generator (sympy's
  assumption-order shuffler, ``sympy.core.random._assumptions_rng``; ``tempfile``'s names)
  draws the recorded numbers on replay. Made by snapstate's own work, it is left alone;
- ``uuid.uuid1``, ``uuid4``, and ``uuid6``/``uuid7`` where present; ``os.urandom`` and
  ``os.getrandom``; ``secrets``' functions; ``input``.

Not patched, because their clock reads are scheduling, not data: calls from the standard
library's machinery (``asyncio``'s event loop, ``threading``, ``concurrent.futures``,
``queue``, ``selectors``, ``socket``, ``ssl``, ``subprocess``, ``multiprocessing``, ``sched``,
``logging`` timestamps), the debugger's prompt (``pdb``, ``cmd``, ``code``: a replay's
``--pdb`` or ``--console`` reading its commands with ``input``) and snapstate itself — with
what ``uuid`` and ``secrets`` functions call from there. Effects called inside an effect are
part of it. Functions bound by name before the patch (``from time import time``) keep the originals —
``snapstate record --patch-nondeterminism`` patches before the program imports anything, so
there only code imported earlier by snapstate itself keeps them. ``SystemRandom``, numpy's
generators, a ``random.Random`` made before the patch (``random``'s shared one is restored
from the recording instead) and C code reading the clock are not covered.
"""

from __future__ import annotations

import gc
import os
import random
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable

from . import effects
from .frames import _INSPECT_DIR, _PACKAGE_DIR
from .recorder import active_recorder


def _no_time_argument(position: int) -> Callable[[tuple, dict], bool]:
    """A ``reads`` test: the call reads the clock when the time argument at ``position``
    (or ``secs``/``t``) is missing or None."""
    def reads(args: tuple, kwargs: dict) -> bool:
        if len(args) > position:
            return args[position] is None
        return all(kwargs.get(name) is None for name in ("secs", "t"))
    return reads


def _no_seed(args: tuple, kwargs: dict) -> bool:
    return (args[0] if args else kwargs.get("a")) is None


@dataclass(frozen=True)
class Target:
    """One patched function: ``module.attribute`` (``cls`` for a method on a class, patched in
    the class's own dict), its effect name, ``advance`` (a ``random`` draw: on replay the
    generator still moves, see ``effects.begin_call``) and ``reads`` (None: every call is an
    effect; else a test of the arguments — False runs the original unrecorded)."""

    module: str
    attribute: str
    cls: str | None = None
    advance: bool = False
    reads: Callable[[tuple, dict], bool] | None = None

    @property
    def name(self) -> str:
        owner = f"{self.module}.{self.cls}" if self.cls else self.module
        return self.attribute if self.module == "builtins" else f"{owner}.{self.attribute}"


_CLOCKS = ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns",
           "process_time", "process_time_ns", "thread_time", "thread_time_ns")
_DRAWS = ("random", "randint", "randrange", "uniform", "choice", "choices", "sample",
          "getrandbits", "randbytes", "gauss", "normalvariate", "lognormvariate", "expovariate",
          "vonmisesvariate", "gammavariate", "betavariate", "paretovariate", "weibullvariate",
          "triangular", "binomialvariate")

TARGETS: tuple[Target, ...] = (
    *(Target("time", name) for name in _CLOCKS),
    Target("time", "localtime", reads=_no_time_argument(0)),
    Target("time", "gmtime", reads=_no_time_argument(0)),
    Target("time", "ctime", reads=_no_time_argument(0)),
    Target("time", "asctime", reads=_no_time_argument(0)),
    Target("time", "strftime", reads=_no_time_argument(1)),
    Target("datetime", "now", cls="datetime"),
    Target("datetime", "utcnow", cls="datetime"),
    Target("datetime", "today", cls="date"),
    *(Target("random", name, advance=True) for name in _DRAWS),
    Target("random", "seed", reads=_no_seed),
    Target("uuid", "uuid1"), Target("uuid", "uuid4"), Target("uuid", "uuid6"),
    Target("uuid", "uuid7"),
    Target("os", "urandom"), Target("os", "getrandom"),
    *(Target("secrets", name) for name in ("token_bytes", "token_hex", "token_urlsafe",
                                            "randbelow", "randbits", "choice")),
    Target("builtins", "input"),
)

_STDLIB = os.path.dirname(os.path.abspath(os.__file__))
#: Callers whose clock reads are scheduling machinery, not data (see the module docstring).
_MACHINERY = (
    *(os.path.join(_STDLIB, name) + os.sep for name in (
        "asyncio", "concurrent", "multiprocessing", "logging")),
    *(os.path.join(_STDLIB, name) for name in (
        "threading.py", "queue.py", "selectors.py", "socket.py", "ssl.py", "subprocess.py",
        "sched.py", "socketserver.py",
        # the debugger's own prompt (``replay --pdb``, ``--console``), not the program's input
        "pdb.py", "bdb.py", "cmd.py", "code.py")),
    _PACKAGE_DIR + os.sep, _INSPECT_DIR + os.sep,
)
_machinery_files: dict[str, bool] = {}


def is_machinery(filename: str) -> bool:
    """True when calls from ``filename`` are left unpatched (scheduling, snapstate's own)."""
    known = _machinery_files.get(filename)
    if known is None:
        known = _machinery_files[filename] = (
            not filename.startswith("<") and os.path.abspath(filename).startswith(_MACHINERY))
    return known


def _effect_call(recorder: Any, target: Target, original: Callable[..., Any],
                 args: tuple, kwargs: dict, caller: Any) -> Any:
    call = effects.begin_call(recorder, target.name, original, args, kwargs, caller,
                              advance=target.advance)
    if call is None:
        return original(*args, **kwargs)
    effects.run_call(call)
    return effects.end_call(recorder, call)


#: Modules whose patched functions call other patched ones (``uuid4`` reads ``os.urandom``,
#: ``secrets`` reads ``os.urandom`` and ``random``): called by machinery, they run with every
#: patched function passing too (``_machinery_call``) — snapstate's own ``uuid4`` (a fork's run
#: id) was journaled as the program's ``os.urandom``, and a traced fork diverged there.
_NESTING = frozenset({"uuid", "secrets"})


def _machinery_call(target: Target, original: Callable[..., Any], args: tuple,
                    kwargs: dict) -> Any:
    """Run ``original`` unrecorded; for a ``_NESTING`` module's function, what it calls too."""
    if target.module not in _NESTING or effects._inside.get():
        return original(*args, **kwargs)
    token = effects._inside.set(True)
    try:
        return original(*args, **kwargs)
    finally:
        effects._inside.reset(token)


def _passes(recorder: Any, target: Target, args: tuple, kwargs: dict, caller: Any) -> bool:
    """True when this call runs the original unrecorded."""
    return (recorder is None or effects._inside.get()
            or getattr(recorder._reentry, "busy", False)
            or (target.reads is not None and not target.reads(args, kwargs))
            or is_machinery(caller.f_code.co_filename))


def _function_patch(target: Target, original: Callable[..., Any]) -> Callable[..., Any]:
    def patched(*args: Any, **kwargs: Any) -> Any:
        recorder = active_recorder()
        caller = sys._getframe(1)
        if _passes(recorder, target, args, kwargs, caller):
            return _machinery_call(target, original, args, kwargs)
        return _effect_call(recorder, target, original, args, kwargs, caller)

    patched.__name__ = patched.__qualname__ = target.attribute
    patched.__doc__ = getattr(original, "__doc__", None)
    patched.__wrapped__ = original  # type: ignore[attr-defined]
    return patched


def _class_patch(target: Target, descriptor: Any) -> classmethod:
    """A classmethod standing in for the C classmethod ``descriptor`` (``datetime.now``)."""
    def patched(cls: type, *args: Any, **kwargs: Any) -> Any:
        original = descriptor.__get__(None, cls)
        recorder = active_recorder()
        caller = sys._getframe(1)
        if _passes(recorder, target, args, kwargs, caller):
            return _machinery_call(target, original, args, kwargs)
        return _effect_call(recorder, target, original, args, kwargs, caller)

    patched.__name__ = patched.__qualname__ = target.attribute
    patched.__doc__ = getattr(descriptor, "__doc__", None)
    return classmethod(patched)


def _type_dict(cls: type) -> dict[str, Any]:
    """The writable dict behind ``cls.__dict__`` (a C type's attributes cannot be set)."""
    referents = gc.get_referents(cls.__dict__)
    if len(referents) != 1 or not isinstance(referents[0], dict):
        raise TypeError(f"cannot reach the attributes of {cls.__qualname__}")
    return referents[0]


def _type_modified(cls: type) -> None:
    import ctypes

    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


#: The generator class whose unseeded instances take their seed from the journal.
_RANDOM_SEED = Target("random", "seed", cls="Random")
_urandom = os.urandom


def _fresh_seed() -> int:
    """What ``random.Random.seed(None)`` would use: 32 bytes from the operating system."""
    return int.from_bytes(_urandom(32), "big")


def _made_by_snapstate(frame: Any) -> bool:
    """True when the nearest snapstate frame below ``frame`` is its machinery (a generator
    made for snapstate's own work), not a wrapper handing over to the program."""
    from ..tracing.include import machinery_below

    return machinery_below(frame)


def _seed_patch(original: Callable[..., Any]) -> Callable[..., Any]:
    def seed(self: random.Random, a: Any = None, version: int = 2) -> Any:
        recorder = active_recorder()
        caller = sys._getframe(1)
        if (a is None and not _passes(recorder, _RANDOM_SEED, (), {}, caller)
                and not _made_by_snapstate(caller)):
            a = _effect_call(recorder, _RANDOM_SEED, _fresh_seed, (), {}, caller)
        return original(self, a, version)

    seed.__name__, seed.__qualname__ = "seed", "Random.seed"
    seed.__doc__ = getattr(original, "__doc__", None)
    seed.__wrapped__ = original  # type: ignore[attr-defined]
    return seed


class _Patch:
    """One installed target: how to put the original back."""

    def __init__(self, target: Target) -> None:
        import importlib

        self.target = target
        module = importlib.import_module(target.module)
        if target is _RANDOM_SEED:  # a Python class: its method replaced by a plain function
            self.owner = random.Random
            self.original = random.Random.__dict__["seed"]
            self.replacement = _seed_patch(self.original)
        elif target.cls is None:
            self.owner: Any = module
            self.original = getattr(module, target.attribute)  # AttributeError: not here
            self.replacement: Any = _function_patch(target, self.original)
        else:
            if sys.implementation.name != "cpython":
                raise TypeError("class methods are patched on CPython only")
            self.owner = getattr(module, target.cls)
            self.original = self.owner.__dict__[target.attribute]
            self.replacement = _class_patch(target, self.original)

    def install(self) -> None:
        if self.target.cls is None or self.target is _RANDOM_SEED:
            setattr(self.owner, self.target.attribute, self.replacement)
        else:
            _type_dict(self.owner)[self.target.attribute] = self.replacement
            _type_modified(self.owner)

    def remove(self) -> None:
        if self.target.cls is None or self.target is _RANDOM_SEED:
            if getattr(self.owner, self.target.attribute, None) is self.replacement:
                setattr(self.owner, self.target.attribute, self.original)
        else:
            attributes = _type_dict(self.owner)
            if attributes.get(self.target.attribute) is self.replacement:
                attributes[self.target.attribute] = self.original
                _type_modified(self.owner)


_lock = threading.Lock()
_depth = 0
_installed: list[_Patch] = []
#: Targets that could not be patched here, with the reason (e.g. ``uuid.uuid7`` before 3.14).
skipped: dict[str, str] = {}


def patch_nondeterminism() -> None:
    """Route every target in ``TARGETS`` through the effect journal (see the module docstring).

    Nested uses are counted; each ``unpatch_nondeterminism()`` undoes one. A target missing
    from this Python (``uuid.uuid7``) or that cannot be patched is left alone and named in
    ``skipped``. Never raises.
    """
    global _depth
    with _lock:
        _depth += 1
        if _depth != 1:
            return
        for target in (*TARGETS, _RANDOM_SEED):
            try:
                patch = _Patch(target)
                patch.install()
            except Exception as exc:  # noqa: BLE001 - one source left alone, never an error
                skipped[target.name] = f"{type(exc).__name__}: {exc}"
                continue
            _installed.append(patch)


def unpatch_nondeterminism() -> None:
    """Undo one ``patch_nondeterminism()``; the originals come back after the last one."""
    global _depth
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth:
            return
        while _installed:
            patch = _installed.pop()
            try:
                patch.remove()
            except Exception:  # noqa: BLE001 - a target that cannot be put back stays patched
                pass  # (it passes every call through once no recorder is active)


def patched_names() -> list[str]:
    """The effect names of the targets patched right now."""
    with _lock:
        return [patch.target.name for patch in _installed]

