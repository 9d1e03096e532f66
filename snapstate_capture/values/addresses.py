"""Ints that are object addresses: told apart from numbers so that a replay does not diverge on
them (``identity.py``).

Programs key memos and "seen" sets by ``id(obj)`` — networkx's ``argmap`` keeps
``{id(f): (name, f)}``, its ``_flatten`` a set of the ids of the lists it entered, ``copy``
and ``json`` do the same. An id is the object's address: another number in every process, so
a replayed run that is exactly the recorded one holds other ints there. The identity digest
writes such an int as "an address" instead of its number when it is the id of

- a part of the same value (the first walk of ``identity.identity`` collects them), or
- a local of one of the program's frames on the capturing thread's stack
  (``stack_addresses``; module and class bodies count their namespace) — the set of ids of
  the lists ``_flatten`` entered holds the id of its own argument — or an object a few steps
  beneath such a local (pyparsing's ``seen`` set of the expressions it walked down).

An address is written as what it names: the part's own digest, or the local's function and
name — so two ids swapped between two values (``{id(a): 5, id(b): 7}`` against
``{id(a): 7, id(b): 5}``) are still two different values.

Anything else — an int equal to no such object — stays a number, so a real change of a big
int is never hidden. Which ints could be addresses is narrowed first by ``could_be_address``
(CPython's objects are at least 8-byte aligned, in the 47-bit user address space).
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from collections import deque
from operator import itemgetter
from typing import Any, Iterable

from .static import static_attributes

#: Smallest and largest int taken for a possible address (CPython's ids are heap addresses).
ADDRESS_MIN = 1 << 20
ADDRESS_MAX = 1 << 47
_CO_OPTIMIZED = inspect.CO_OPTIMIZED
#: Frames of these packages are SnapState's own, never the program's.
_OWN = ("snapstate_capture", "snapstate_inspect")


def could_be_address(value: int) -> bool:
    """Whether the int ``value`` is in the range and alignment of a CPython object's id."""
    return ADDRESS_MIN <= value < ADDRESS_MAX and not value & 7


def _lowest_writable() -> int:
    """The lowest address of this process's writable memory (Linux ``/proc/self/maps``),
    where every object lives — the interpreter's data segment, its heap and its arenas;
    ``ADDRESS_MIN`` where that cannot be read. New memory is mapped above it (a 64-bit
    process maps from the top down, or up from above its heap)."""
    starts = []
    try:
        with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
            for line in maps:
                fields = line.split(maxsplit=2)
                if len(fields) > 1 and fields[1].startswith("rw"):
                    starts.append(int(fields[0].split("-", 1)[0], 16))
    except (OSError, ValueError):
        return ADDRESS_MIN
    return max(min(starts, default=ADDRESS_MIN), ADDRESS_MIN)


#: This process's lowest object address (``_lowest_writable``), read at the first int that
#: could be an address: a PIE interpreter's is above 2**46, so counters, byte counts and ms
#: timestamps are never taken for ids of locals.
_lowest_object: int | None = None


def could_be_live_address(value: int) -> bool:
    """``could_be_address``, and within this process's writable memory: the pre-filter of
    the searches for what an int is the id of (``local_address``, ``holds_stack_address``),
    which cost a walk of the stack — never of text, whose rule is the same in every process
    (``blank_addresses``)."""
    return could_be_address(value) and value >= (_lowest_object or lowest_object())


def lowest_object() -> int:
    """This process's lowest object address (``_lowest_writable``), read once."""
    global _lowest_object
    if _lowest_object is None:
        _lowest_object = _lowest_writable()
    return _lowest_object


#: An address in the default repr's form, anywhere in a text: ``<Foo object at 0x7f…>``.
_AT_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
#: A hex number standing alone (``0x`` or not) in an object's repr: Jinja's
#: ``<Template memory:7ffff45826d0>``, ``<Foo 0x7f…>``, ``id=0x7f…``.
_HEX_WORD = re.compile(r"(?<![0-9A-Za-z_])(0x)?([0-9a-fA-F]{6,16})(?![0-9A-Za-z_])")
_HEX_LETTER = re.compile(r"[a-fA-F]")
#: An id written in decimal after ``@`` in an object's repr: transitions'
#: ``<Event('pay')@140737310209040>``, ``<State('done')@…>``.
_AT_DECIMAL = re.compile(r"@([0-9]{7,15})(?![0-9A-Za-z_])")
#: Phrases after which a library writes an object's id in hex without ``0x`` in an
#: exception's message: anyio names the cancel scope that cancelled a task
#: (``Cancelled via cancel scope 7ffff4a4d620 by <Task ...>``), the ``CancelledError`` an
#: effect under ``anyio.move_on_after`` / ``fail_after`` ends in (``message_without_addresses``).
ADDRESS_PHRASES = ("cancel scope ",)
_AFTER_PHRASE = re.compile("(" + "|".join(map(re.escape, ADDRESS_PHRASES))
                           + r")([0-9a-f]{6,16})(?![0-9A-Za-z_])")


def blank_addresses(text: str) -> str:
    """``text`` — a value's repr — with the memory addresses in it blanked, so that two
    processes write the same text for the same value: `` at 0x7f…`` anywhere (a string that
    holds a default repr too), and in an object's repr (text starting with ``<``) any hex
    number that could be an address (``could_be_address``), written with ``0x`` or, if it has
    a hex letter, without (a bare decimal number is a number); and after one of
    ``ADDRESS_PHRASES`` (an exception's repr holds its message); and in an object's repr a
    decimal number after ``@`` that could be an address (transitions writes ``id(self)``
    so: a traced callback's ``EventData`` diverged at every replay, helper-39 4 of 4). The
    digits become ``…``."""
    text = _AT_ADDRESS.sub(" at 0x…", text)
    if text.startswith("<"):
        text = _HEX_WORD.sub(_blank_hex, text)
        if "@" in text:
            text = _AT_DECIMAL.sub(_blank_decimal, text)
    return _blank_after_phrases(text)


def _blank_decimal(match: re.Match[str]) -> str:
    # above 4 GiB as well: a timestamp or a block number after "@" stays a number
    value = int(match.group(1))
    return "@…" if value >= HEAP_MIN and could_be_address(value) else match.group(0)


def _blank_after_phrases(text: str) -> str:
    """``text`` with an address after one of ``ADDRESS_PHRASES`` blanked."""
    for phrase in ADDRESS_PHRASES:
        if phrase in text:
            return _AFTER_PHRASE.sub(_blank_hex, text)
    return text


def may_hold_address(text: str) -> bool:
    """Whether ``text_without_addresses`` could change ``text``: it holds `` at 0x`` or
    starts with ``<`` (substring tests only, no regex)."""
    return " at 0x" in text or text[:1] == "<"


def text_without_addresses(text: str) -> str:
    """``blank_addresses(text)`` for a string *value* (not a repr), read by every comparison
    of a recorded string with a live one — the identity digest (``identity._scalar``), inline
    scalars in replay's step checks (``replay/compare.py``, ``replay/fastpath.py``,
    ``replay/traced_compare.py``) — so that a text a program built from an address
    (pyparsing names an element ``Re:(<function <lambda> at 0x7f…>)``) is the same text in
    two processes, and any other difference in it is still one. Returns ``text`` itself
    (no regex runs) when it could hold no address (``may_hold_address``)."""
    if may_hold_address(text):
        return blank_addresses(text)
    return text


def message_without_addresses(text: str) -> str:
    """``text_without_addresses`` for an exception's message, where a library may also write
    an id in hex without ``0x`` after one of ``ADDRESS_PHRASES`` (anyio's ``Cancelled via
    cancel scope 7ffff4a4d620``): those digits are blanked too. Only exceptions' arguments
    are read so (``identity``), not every string a program holds: the phrase test is a scan
    of the text, and the identity digest meets many strings."""
    return _blank_after_phrases(text_without_addresses(text))


def _blank_hex(match: re.Match[str]) -> str:
    prefix, digits = match.group(1), match.group(2)
    if (prefix or _HEX_LETTER.search(digits)) and could_be_address(int(digits, 16)):
        return f"{prefix or ''}…"
    return match.group(0)


_FLAT = (set, frozenset, list, tuple)


def local_address(value: Any) -> str | None:
    """For an int that is the id of a local of one of the program's frames on this thread's
    stack, or of an object beneath one (``stack_addresses``): ``"function.name"`` of that
    local (``"function.name[2].value"`` beneath it), else None (any other value, or an int
    equal to no such object's id). pyparsing's ``ParserElement.__hash__`` returns
    ``id(self)``, ``json``'s encoder keeps ``markerid = id(dct)``, PyYAML's
    ``flatten_mapping`` ``key_id = id(pair[0].value)``: a bare int holding an address, which
    capture stores as what it names (``identity_at_capture.capture_identity``) instead of inline,
    compared by number. It is looked for beneath the locals as a memo's ids are (from
    ``HEAP_MIN`` up)."""
    if type(value) is not int or not could_be_live_address(value):
        return None
    return stack_addresses((value,), memo=True).get(value)


def part_address(value: Any, obj: Any, parts: list[tuple[str, Any]]) -> str | None:
    """What the int ``value``, one of ``obj``'s own parts (``parts``: its ``(label, child)``
    pairs, ``".attr"`` or ``"[2]"``), is the id of: ``"value"`` (``obj`` itself),
    ``"value.attr"`` (a part), ``"value.attr[3]"`` (an item of a list, tuple or dict part), or
    a local on the stack or an object beneath one (``stack_addresses``); None for any other
    value. A value shown one level deep (``tracing/bounded.py``) labels such an int
    ``id(value.object_keeper[3]) at 0x…``, compared with the address blanked: PyYAML's
    representer keeps ``alias_key = id(data)``, ``data`` kept in its ``object_keeper`` list."""
    if type(value) is not int or not could_be_live_address(value):
        return None
    if id(obj) == value:
        return "value"
    for label, child in parts:
        if id(child) == value:
            return f"value{label}"
    for label, child in parts:
        cls = type(child)
        items: Any = (dict.values(child) if cls is dict else child
                      if cls is list or cls is tuple else ())
        if len(items) > PART_SCAN:
            continue
        if cls is dict and value in map(id, items):
            key = next(k for k, v in dict.items(child) if id(v) == value)
            return f"value{label}{_key_label(key)}"
        if value in map(id, items):
            return f"value{label}[{list(map(id, items)).index(value)}]"
    return stack_addresses((value,), memo=True).get(value)


#: Items of one part ``part_address`` looks through for what an int is the id of.
PART_SCAN = 100_000


def holds_stack_address(value: Any) -> bool:
    """Whether ``value`` — an int, a set, frozenset, list or tuple, or a dict by its keys and
    values — is or holds at its top level an int that is the id of a local on this thread's stack
    (``stack_addresses``), or, in a set's members or a dict's keys — the form a memo of ids
    takes — in a tuple there (dataclasses' ``repr_running``: ``{(id(self), thread)}``). The
    tracer asks before storing a container of scalars as its plain bytes, which would compare
    by number; ``set(map(type, ...))`` runs at C speed, and the stack is read only when a
    possible address is there."""
    cls = type(value)
    if cls is int:  # a bare int: ``local_address``
        return local_address(value) is not None
    keyed = ()
    if cls is dict:
        kinds = set(map(type, value))
        keyed = value if tuple in kinds else ()
        kinds.update(map(type, dict.values(value)))
        parts: Any = (*value, *dict.values(value)) if int in kinds else ()
    elif cls in _FLAT:
        kinds = set(map(type, value))
        parts = value if int in kinds else ()
        if cls is set or cls is frozenset:
            keyed = value if tuple in kinds else ()
    else:
        return False
    ints = [part for part in parts if type(part) is int]
    # (a container of small numbers — counts, indexes, a dict keyed by 0..n — has none: told
    # by its largest at C speed, not by a call per number: 20% of a traced call that passed
    # a 1,000-entry dict)
    ints = [part for part in ints if could_be_live_address(part)] if (
        ints and max(ints) >= ADDRESS_MIN) else []
    ints += [item for part in keyed if type(part) is tuple for item in part
             if type(item) is int and could_be_live_address(item)]
    return bool(ints) and bool(stack_addresses(ints, memo=cls is not list and cls is not tuple))


#: Program frames read for locals, innermost first (a deep recursion is not walked whole at
#: every capture: 1,000 frames made a traced step ~20x slower).
STACK_DEPTH = 64


def stack_addresses(candidates: Iterable[int], *, memo: bool = False) -> dict[int, str]:
    """``{address: what it is the id of}`` for those of ``candidates`` (ints) that are the id
    of a local — the top-level value of a local name, ``"function.name"`` — of one of the
    ``STACK_DEPTH`` innermost frames of the program on this thread's stack, or else of an
    object a few steps beneath one (``"function.name.attr[2]"``: ``_beneath_locals``) — looked
    for when one of the candidates is a local's id, or ``memo`` (they are a set's members or a
    dict's keys: the form a memo of ids takes, or one bare int) and one is above ``HEAP_MIN`` —
    so that numbers
    that merely look like addresses seldom cost a walk (a set of them that changes at every
    traced step, beside locals holding thousands of objects, can: ~3x the recording's time).

    An id of an object of the ``builtins`` module is named by its name there
    (``"builtins.__loader__"``: ``_builtin_ids``).

    A frame's locals are read only where that leaves no trace: a module or class body's own
    namespace (an exact dict: a ``__prepare__`` mapping of the program's is not read), a frame
    the tracer traces (its trampoline keeps the snapshot in step), or any function frame when
    no tracer runs (the snapshot is let go of, ``release_locals_snapshot``). Under a tracer,
    an untraced function frame is read and its snapshot let go of too — a library's caller
    holding what a traced callee's memo is keyed by (``copy.deepcopy``'s ``x`` for a traced
    ``__deepcopy__``'s ``memo``: helper-39, 3 of 3) — but for the innermost, which a trace
    event may be for (its trampoline writes the snapshot back after the event)."""
    wanted = set(candidates)
    found: dict[int, str] = {}
    builtin = _builtin_ids()
    if not wanted.isdisjoint(builtin):  # glom maps the ids of every builtin to its name
        for address in wanted & builtin.keys():
            found[address] = f"builtins.{builtin[address]}"
        wanted -= found.keys()
    # per frame, innermost first: (function, its locals), named as paths only if walked
    frames: list[tuple[str, list[tuple[str, Any]]]] = []
    tracing = sys.gettrace() is not None or sys.getprofile() is not None
    frame: types.FrameType | None = sys._getframe(1)
    depth = 0
    while frame is not None and wanted and depth < STACK_DEPTH:
        name = frame.f_globals.get("__name__")
        if not (isinstance(name, str) and name.startswith(_OWN)):
            depth += 1
            function = frame.f_code.co_flags & _CO_OPTIMIZED
            untraced = bool(function and tracing and frame.f_trace is None)
            if not (untraced and depth == 1):  # (the frame a trace event may be for)
                snapshot = frame.f_locals
                if type(snapshot) is dict:
                    where = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
                    items = list(dict.items(snapshot))
                    if not wanted.isdisjoint(map(id, map(_second, items))):  # at C speed
                        for local, value in items:
                            if id(value) in wanted:
                                wanted.discard(id(value))
                                found[id(value)] = f"{where}.{local}"
                        value = None
                    if function and items:  # a module's namespace is the whole program
                        frames.append((where, items))
                    items = []
                    if function and not tracing:
                        release_locals_snapshot(frame, snapshot)
                    elif untraced:  # a caller no trace event is for: its dict is let go
                        release_locals_snapshot(frame, snapshot, calling=True)
                snapshot = None
        frame = frame.f_back
    if wanted and frames and (found or memo and max(wanted) >= HEAP_MIN):
        roots = [[(f"{where}.{local}", value) for local, value in items]
                 for where, items in frames]
        _beneath_locals(roots, wanted, found)
    return found


_second = itemgetter(1)
_BUILTIN_IDS: tuple[int, dict[int, str]] = (-1, {})


def _builtin_ids() -> dict[int, str]:
    """``{id(value): name}`` of the ``builtins`` module's namespace (made again when it
    grew or shrank). Most of its objects are the interpreter's static ones, at one address in
    every process, but not all: ``__loader__`` (importlib's ``BuiltinImporter``, made at
    start-up) lies elsewhere in a replay child, and glom's ``_BUILTIN_ID_NAME_MAP`` diverged
    at its import (helper-39: 5 of 5)."""
    global _BUILTIN_IDS
    import builtins

    namespace = vars(builtins)
    size, known = _BUILTIN_IDS
    if size != len(namespace):
        known = {id(value): name for name, value in list(namespace.items())}
        _BUILTIN_IDS = (len(namespace), known)
    return known


#: Below this no heap address of a 64-bit CPython is met in practice (a PIE binary's heap and
#: mmap'd arenas lie far above): a memo of smaller ints is taken for numbers, not walked for.
HEAP_MIN = 1 << 32
#: How far beneath a local, and how many objects in all, ``_beneath_locals`` looks.
REACH_DEPTH = 8
REACH_BUDGET = 5_000
#: Values with nothing beneath them to look at.
_LEAVES = frozenset({type(None), bool, int, float, complex, str, bytes, bytearray, range,
                     types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                     types.ModuleType, type})


def _beneath_locals(roots: list[list[tuple[str, Any]]], wanted: set[int],
                    found: dict[int, str]) -> None:
    """Name the ids in ``wanted`` that are of objects beneath the locals ``roots`` (per frame,
    innermost first: ``(path, value)``), frame by frame and breadth first in the program's own
    order — list and tuple items, dict values, instance attributes read statically, a string
    or another leaf named but not entered — at most
    ``REACH_DEPTH`` steps down and ``REACH_BUDGET`` objects in all. A search keeps ids of what
    it has entered: pyparsing's ``And.streamline`` walks ``self.exprs[1]`` and what it leads
    to, a local no longer holding the first of them, and a replay diverged on its ``seen`` set
    at every grammar. The innermost frame is searched first: a memo of ids is made where its
    objects are at hand, and one breadth-first pass over every frame spent the budget on the
    outer frames' big graphs (pytest's session under a test) before reaching it."""
    met = {id(value) for frame in roots for _, value in frame}
    budget = REACH_BUDGET
    for frame in roots:
        queue = deque((path, value, 0) for path, value in frame)
        while queue and wanted and budget > 0:
            path, value, level = queue.popleft()
            if level >= REACH_DEPTH:
                continue
            for label, child in _beneath(value):
                budget -= 1
                key = id(child)
                if key in met:
                    continue
                met.add(key)
                if key in wanted:  # a leaf too: PyYAML keeps ids of key strings
                    wanted.discard(key)
                    found[key] = f"{path}{label}"
                if type(child) not in _LEAVES:
                    queue.append((f"{path}{label}", child, level + 1))


def _beneath(value: Any) -> list[tuple[str, Any]]:
    """What ``_beneath_locals`` looks at under ``value``, read without running its code."""
    cls = type(value)
    try:
        if cls is list or cls is tuple:
            return [(f"[{index}]", item) for index, item in enumerate(value)]
        if cls is dict:
            return [(_key_label(key), item) for key, item in dict.items(value)]
        if cls in _LEAVES or cls in (set, frozenset):
            return []
        return [(f".{name}", item) for name, item in static_attributes(value) or []]
    except Exception:  # noqa: BLE001 - an unreadable object: nothing beneath it
        return []


def _key_label(key: Any) -> str:
    """A dict key in a path ``_beneath_locals`` names: ``['name']`` or ``[3]``, and ``[…]`` for
    any other key — an object, or an int that could be an address (``copy.deepcopy``'s memo
    is keyed by ids: its number in a path made the name another in every process)."""
    cls = type(key)
    if cls is str or cls is int and not could_be_address(key):
        return f"[{key!r}]"
    return "[…]"


def release_locals_snapshot(frame: types.FrameType, snapshot: Any,
                            calling: bool = False) -> None:
    """Empty the dict that reading ``frame.f_locals`` left on a running function's frame.

    On CPython up to 3.12 that dict stays on the frame and keeps every local alive after the
    program deletes it (a weak reference would not die), until the next read. It is emptied
    only when nobody can observe it: a function frame (never a module or class body, whose
    ``f_locals`` is the real namespace), no Python trace or profile function active (their
    trampoline writes the dict back into the frame), and no other reference (the program's own
    ``locals()`` result). The next read of ``f_locals`` or ``locals()`` fills it again.

    ``calling``: ``frame`` is the caller of the frame a trace event is for (call tracing's
    catch-up of the caller, ``CallFrame.refresh``): the trampoline writes back the event's
    own frame only, so the caller's dict is emptied under a trace function too — a test's
    object handed to a traced call lived on after its ``del`` until the test's next step.
    """
    if (type(snapshot) is not dict or not frame.f_code.co_flags & _CO_OPTIMIZED
            or (not calling and sys.gettrace() is not None) or sys.getprofile() is not None):
        return
    # References: the frame, the caller's variable, this parameter, getrefcount's argument.
    if sys.getrefcount(snapshot) <= 4:
        snapshot.clear()
