"""What the line tracer needs to know about one code object, computed once per code object.

For each line, which local names its bytecode may rebind (``STORE_*``/``DELETE_*``) and which
it may mutate in place (names loaded on a line that also calls something or stores into an
attribute or item). At a ``line`` event for line L the tracer re-reads only the names touched by
the line that ran just before L, so a step costs a few dictionary reads instead of a walk over
every local (issue 6 point 7).

Known limits, by design: a value changed behind the frame's back — through an alias held by
another frame, another thread, or a nested function assigning a ``nonlocal`` — is re-read only
the next time a line of this frame touches the name.
"""

from __future__ import annotations

import dis
import types
import weakref
from dataclasses import dataclass
from typing import Any

from ..options import ValueOptions

_STORES = {"STORE_FAST", "DELETE_FAST", "STORE_NAME", "DELETE_NAME", "STORE_DEREF",
           "DELETE_DEREF", "STORE_GLOBAL", "DELETE_GLOBAL"}
_LOADS = {"LOAD_FAST", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_CLASSDEREF",
          "LOAD_GLOBAL"}
#: Instructions after which an object reachable from a loaded name may have changed in place.
_MUTATORS = {"CALL", "CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_EX", "CALL_FUNCTION_KW",
             "STORE_SUBSCR", "DELETE_SUBSCR", "STORE_ATTR", "DELETE_ATTR", "STORE_SLICE",
             "DELETE_SLICE", "SEND", "YIELD_VALUE", "GET_AWAITABLE"}

CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR = 0x20, 0x80, 0x200
#: Code objects of comprehensions: not traced as calls (their effect shows in the line
#: that holds them), which keeps call tracing of ``[f(x) for x in xs]`` to the calls of ``f``.
COMPREHENSIONS = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})


@dataclass(frozen=True)
class CodeInfo:
    """Per-line name sets of one code object.

    ``touched[line]``: what to re-read after ``line`` ran — a str (the one name it rebinds, the
    common case, kept apart for speed) or ``(rebound, names maybe mutated in place)`` where
    ``rebound`` is None, one name (a str) or a tuple of names;
    ``secret``: names whose values are always redacted; ``module``: the code runs with
    ``f_locals is f_globals`` (module or class body), where dunder names are skipped;
    ``suspends``: a generator or coroutine (its frame is left and re-entered).
    """

    function: str
    filename: str
    touched: dict[int, Any]
    secret: frozenset[str]
    module: bool
    suspends: bool
    comprehension: bool = False


#: Analyses made in this process, by the value options they were made under (secret names
#: come from them), then weakly by code object: a code object's analysis never changes, and a
#: process records the same code again and again (``pytest --snapstate`` traces every test
#: under a new tracer; analysing pytest's and pluggy's code afresh each time cost ~2%).
_ANALYSED: dict[ValueOptions, weakref.WeakKeyDictionary[types.CodeType, CodeInfo]] = {}


def analyse(code: types.CodeType, values: ValueOptions) -> CodeInfo:
    """Return the ``CodeInfo`` of ``code`` under ``values`` (never raises: an unreadable code
    gets no line sets); made once per process for each code object and options (``_ANALYSED``;
    options that cannot be hashed, a list among their patterns, are analysed each time)."""
    try:
        made = _ANALYSED.get(values)
    except TypeError:
        return _analyse(code, values)
    if made is None:
        if len(_ANALYSED) >= 16:  # options made afresh with other patterns, again and again
            _ANALYSED.clear()
        made = _ANALYSED[values] = weakref.WeakKeyDictionary()
    info = made.get(code)
    if info is None:
        info = made[code] = _analyse(code, values)
    return info


def _analyse(code: types.CodeType, values: ValueOptions) -> CodeInfo:
    """``analyse``'s work: the line sets read from the bytecode."""
    stores: dict[int, set[str]] = {}
    loads: dict[int, set[str]] = {}
    try:
        line = code.co_firstlineno
        loaded: set[str] = set()
        mutates = False
        for ins in dis.get_instructions(code):
            if ins.starts_line is not None:
                if mutates and loaded:
                    loads.setdefault(line, set()).update(loaded)
                line, loaded, mutates = ins.starts_line, set(), False
            if ins.opname in _MUTATORS:
                mutates = True
            name = ins.argval if isinstance(ins.argval, str) else None
            if name is None:
                continue
            if ins.opname in _STORES:
                stores.setdefault(line, set()).add(name)
            elif ins.opname in _LOADS:
                loaded.add(name)
        if mutates and loaded:
            loads.setdefault(line, set()).update(loaded)
    except Exception:  # noqa: BLE001 - a code object dis cannot read: trace calls only
        stores, loads = {}, {}
    names = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars) | set(
        code.co_names)
    module = not code.co_flags & 0x02  # CO_NEWLOCALS unset: a module or class body
    local_names = None if module else (
        set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars))

    def keep(found: set[str]) -> tuple[str, ...]:
        if local_names is not None:
            found = found & local_names
        return tuple(sorted(n for n in found
                            if not (module and n.startswith("__") and n.endswith("__"))))

    out: dict[int, Any] = {}
    for line in set(stores) | set(loads):
        stored, loaded_names = keep(stores.get(line, set())), keep(loads.get(line, set()))
        loaded_names = tuple(n for n in loaded_names if n not in stored)
        if len(stored) == 1 and not loaded_names:
            out[line] = stored[0]
        elif stored or loaded_names:
            single = stored[0] if len(stored) == 1 else (stored or None)
            out[line] = (single, loaded_names)
    return CodeInfo(
        function=getattr(code, "co_qualname", code.co_name),
        filename=code.co_filename,
        touched=out,
        secret=frozenset(n for n in names if values.is_secret(n)),
        module=module,
        suspends=bool(code.co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)),
        comprehension=code.co_name in COMPREHENSIONS,
    )
