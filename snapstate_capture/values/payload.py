"""Payloads: the serialized form of a captured value, loadable later with trust.

Two paths (DESIGN.md "Capture rules"):

1. **Fast path** — one C pickle (protocol 5) of the whole value, modules by reference
   (``reducer_override``). Taken as is unless (a) it raised, (b) it wrote a secret name (a
   dict key or attribute name such as ``api_key``) over a value that name redacts — a string
   that looks like one (a class named ``Token``, a note about a token) is settled by the
   names the pickle really holds (``_written_names_secret``) — or (c) the static load check
   (``loadability``) failed. Plain data (W1's chat messages) only ever takes this path, at C
   speed; the memo check costs one pass over the distinct objects.
2. **Part-by-part path** (``walk.PartWalker``) — every part that neither pickle nor dill can
   write becomes a ``Placeholder`` at its path, secret-named parts become redacted
   placeholders, and the rest is written with pickle, or with dill when a part needs it
   (lambdas, local classes). Classes and functions of ``__main__`` stay by reference under dill
   too (``rebuild.resolve_global``), so an enum of the main script keeps its identity on load.

Every exception, RecursionError included, is caught here; a value nothing can write gets no
payload and its reason goes into the preview's ``placeholder``.
"""

from __future__ import annotations

import inspect
import dataclasses
import io
import pickle
import sys
import types
import warnings
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from ..options import ValueOptions
from . import rebuild, secret_shapes
from .payload_secrets import any_secret, has_credential, has_secret_name
from .loadability import judge
from .placeholder import Placeholder
from .scrub import scrub_text, secret_texts
from .reducers import REDUCERS, function_reduce, importable, module_reduce
from .walk import PROTOCOL, PartWalker, describe, needs_static_setter

__all__ = ["PROTOCOL", "Serialized", "is_plain_payload", "loads", "serialize"]


@dataclass(frozen=True)
class Serialized:
    """Outcome of serializing one value.

    ``data`` is the payload bytes or None; ``serializer`` is ``"pickle"``, ``"dill"`` or None;
    ``error`` says why there is no payload (or why it is not loadable); ``loadable`` is False
    when a test-load failed, None when not tested; ``placeholders`` lists the JSON form of every
    part replaced by a placeholder (``Placeholder.to_json``); ``redacted`` the paths of parts
    redacted because of their names; ``secret_texts`` the strings found under those names
    (``scrub.py``).
    """

    data: bytes | None
    serializer: str | None
    error: str | None = None
    loadable: bool | None = None
    placeholders: tuple[dict[str, str], ...] = field(default_factory=tuple)
    redacted: tuple[str, ...] = field(default_factory=tuple)
    secret_texts: list[str] = field(default_factory=list)


def _override(obj: Any, overrides: dict[int, tuple]) -> Any:
    found = overrides.get(id(obj))
    if found is not None:
        func, args, state, items, pairs, setter = found
        return (func, args, state, None if items is None else iter(items),
                None if pairs is None else iter(pairs), setter)
    cls = type(obj)
    if cls is types.ModuleType:
        return module_reduce(obj) or NotImplemented
    if isinstance(obj, BaseException) and _own_init(cls):
        # pickle's rebuild calls cls(*exc.args), which an __init__ of another signature
        # refuses: rebuilt without calling it (``rebuild.new_exception``), never test-loaded
        reduced = REDUCERS.lookup(cls)
        if reduced is not None:
            return reduced(obj)
    if cls is types.FunctionType and not importable(obj):
        return function_reduce(obj)
    if needs_static_setter(cls) and not isinstance(obj, type):
        reduced = cls.__reduce_ex__(obj, PROTOCOL)
        if isinstance(reduced, tuple) and 2 <= len(reduced) <= 5:
            return (reduced + (None,) * 5)[:5] + (rebuild.restore_state,)
    return NotImplemented


def _own_init(cls: type) -> bool:
    """Whether ``cls`` defines ``__init__`` in Python (read statically)."""
    try:
        return isinstance(inspect.getattr_static(cls, "__init__"), types.FunctionType)
    except Exception:  # noqa: BLE001 - a hostile class: assume it does
        return True


class _Pickler(pickle.Pickler):
    """The C pickler, with modules by reference and the walker's substitutes."""

    def __init__(self, file: io.BytesIO, overrides: dict[int, tuple]) -> None:
        super().__init__(file, protocol=PROTOCOL)
        self._overrides = overrides
        #: Namedtuple classes met while writing (their fields are names: ``payload_secrets``).
        self.field_classes: set[type] = set()

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if cls.__base__ is tuple and isinstance(cls.__dict__.get("_fields"), tuple):
            self.field_classes.add(cls)
        return _override(obj, self._overrides)


def _dill_pickler(file: io.BytesIO, overrides: dict[int, tuple]) -> Any:
    import dill  # imported lazily: most values never need it

    class DillPickler(dill.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            found = _override(obj, overrides)
            if found is not NotImplemented:
                return found
            reducer = REDUCERS.lookup(type(obj))
            if reducer is not None:  # e.g. a TypeVar inside a class that dill copies by value
                reduced = reducer(obj)
                if isinstance(reduced, tuple):
                    return reduced
            if isinstance(obj, (type, types.FunctionType)):
                module = getattr(obj, "__module__", None)
                if (module == "__main__" or _importing(module)) and importable(obj):
                    return rebuild.resolve_global, (module, obj.__qualname__)
            return NotImplemented

    return DillPickler(file, protocol=PROTOCOL)


def _importing(module: Any) -> bool:
    """Whether ``module`` names a submodule still being imported: in ``sys.modules``, but not
    yet an attribute of its package (set when its import ends), so dill cannot find it and
    writes its classes and functions by value — a class ``jinja2.nodes``' metaclass returns,
    before it is bound, was written with every base by value up to ``Node``, all their
    methods with them (107 ms a capture, 7.4 s of a jinja2 recording). They are written by
    reference, as ``__main__``'s are (``rebuild.resolve_global``); a loaded payload imports
    the module. False for any other module: dill's rule, unchanged."""
    if type(module) is not str or "." not in module:
        return False
    found = sys.modules.get(module)
    if found is None:
        return False
    parent, _, child = module.rpartition(".")
    holder = getattr(sys.modules.get(parent), "__dict__", None)
    return type(holder) is dict and holder.get(child) is not found


def _dill_dumps(obj: Any, overrides: dict[int, tuple] | None = None) -> bytes:
    buffer = io.BytesIO()
    _dill_pickler(buffer, overrides or {}).dump(obj)
    return buffer.getvalue()


def _dill_can(obj: Any) -> bool:
    try:
        _dill_dumps(obj)
    except Exception:  # noqa: BLE001 - any failure means "dill cannot write it"
        return False
    return True


def serialize(obj: Any, options: ValueOptions, *, path: str = "") -> Serialized:
    """Serialize ``obj`` (found at ``path``, e.g. its variable name); never raises.

    Returns ``Serialized(data=None, ...)`` with the reason when nothing can be written or the
    result is larger than ``options.max_payload_bytes``. When ``options.test_load`` is on and the
    payload is at most ``options.test_load_limit`` bytes, its loadability is judged from its
    opcodes without loading it (``loadability.judge``: no reconstructor of the program runs):
    a class or function it names that cannot be found makes it ``loadable=False``, error
    ``"not loadable: …"``.
    """
    try:
        fast = _fast(obj, options)
        if fast is not None:
            return fast
        with caught_warnings() as said:
            result = _by_parts(obj, options, path)
        return _with_warnings(result, said)
    except Exception as exc:  # noqa: BLE001 - RecursionError, MemoryError, anything
        return Serialized(None, None, describe(exc))


def caught_warnings() -> CaughtWarnings:
    """Collect the warnings raised inside the block (dill's ``PicklingWarning``, a class's own
    ``__reduce__`` warning) as ``"Category: message"`` texts instead of letting them print on
    the program's stderr: what capture does is never shown as program output; the texts become
    capture errors on the step. ``with caught_warnings() as said:`` — see ``CaughtWarnings``."""
    return CaughtWarnings()


#: The filter put in front of the program's while capture pickles (one object: taken out by
#: identity).
_ALWAYS = ("always", None, Warning, None, 0)


class CaughtWarnings:
    """The context manager of ``caught_warnings`` (a class, not a generator: the trace stream
    enters one around the pickle of nearly every value at every traced call, and a
    ``contextlib`` generator cost 1.4 µs of a 7 µs capture).

    Not ``warnings.catch_warnings``: it tells the warnings machinery that the filters changed,
    at entry and at exit, which empties every module's record of the warnings it has shown —
    so a program warning shown once per place by default was shown again after every captured
    step. Here an ``always`` filter is put in front of the program's for the block and taken
    out again (the list's identity and the filters' version stay), and ``showwarning`` is
    replaced: no record of any module is read differently or changed."""

    __slots__ = ("said", "_filters", "_shown")

    def __init__(self) -> None:
        self.said: list[str] = []

    def __enter__(self) -> list[str]:
        self._filters = filters = warnings.filters
        self._shown = warnings.showwarning
        filters.insert(0, _ALWAYS)
        warnings.showwarning = self._collect
        return self.said

    def __exit__(self, *exc: Any) -> None:
        warnings.showwarning = self._shown
        filters = self._filters
        for position, entry in enumerate(filters):
            if entry is _ALWAYS:
                del filters[position]
                break

    def _collect(self, message: Any, category: type, filename: str, lineno: int,
                 file: Any = None, line: Any = None) -> None:
        text = f"{category.__name__}: {message}"[:300]
        if text not in self.said:
            self.said.append(text)


def _with_warnings(result: Serialized, said: list[str]) -> Serialized:
    if not said:
        return result
    note = "; ".join(said[:3]) + (f"; … {len(said) - 3} more" if len(said) > 3 else "")
    return dataclasses.replace(result, error=f"{result.error}; {note}" if result.error else note)


def _fast(obj: Any, options: ValueOptions) -> Serialized | None:
    """The fast path; None when the part-by-part path must be taken (module docstring)."""
    buffer = io.BytesIO()
    pickler = _Pickler(buffer, {})
    try:
        pickler.dump(obj)
    except Exception:  # noqa: BLE001 - any failure: the part-by-part path finds the bad part
        return None
    data = buffer.getvalue()
    names = _flat_names(obj)
    if options.redact_secrets and (has_secret_name(pickler, data, options, names)
                                   or options.secret_shapes and has_credential(pickler, data)):
        return None
    if len(data) > options.max_payload_bytes:
        return Serialized(None, None, f"payload too large ({len(data)} bytes)")
    if names is not None:
        return Serialized(data, "pickle", None, True)  # plain data always loads: no test-load
    with caught_warnings() as said:
        loadable, error = _test_load("pickle", data, options)
    if loadable is False:
        return None
    return _with_warnings(Serialized(data, "pickle", error, loadable), said)


def is_plain_payload(obj: Any, data: bytes, options: ValueOptions) -> bool:
    """True when ``data``, the plain protocol-5 pickle of ``obj``, is what ``serialize`` writes
    for it: ``obj`` is flat plain data (``_flat_names``) with no secret name and within the
    payload size limit. Lets a caller that pickled a value already (a change detector) keep
    those bytes as its payload instead of pickling it again."""
    if len(data) > options.max_payload_bytes:
        return False
    names = _flat_names(obj)
    return names is not None and not (options.redact_secrets and (
        any_secret(names, options) or options.secret_shapes and secret_shapes.in_bytes(data)))


#: Scalars whose pickle is a plain opcode (no class reference, no reduce): always loadable.
_PLAIN_SCALARS = frozenset({str, bytes, int, float, bool, type(None)})


def _flat_names(obj: Any) -> list[Any] | None:
    """The names in ``obj`` when it is flat plain data, else None.

    Flat plain data is an exact dict or list of ``_PLAIN_SCALARS`` (keys too), or an exact list
    of such dicts (a chunk of chat messages, of records); a dict's values may also be exact
    lists of ``_PLAIN_SCALARS`` (a message's or a record's tags). Its names are exactly its
    dicts' keys (no attributes, no namedtuple fields; a list's items have no name), and its
    pickle holds no code, so the test-load cannot fail and is skipped (~10 µs for W1's
    scratchpad; ~45 µs for a chunk of 16 records with tags). Checked with C-level type scans."""
    cls = type(obj)
    try:
        if cls is dict:
            keys = list(obj)
            if (_plain_values(dict.values(obj))
                    and set(map(type, keys)) <= _PLAIN_SCALARS):
                return keys
        elif cls is list:
            kinds = set(map(type, obj))
            if kinds <= _PLAIN_SCALARS:
                return []
            if kinds == {dict}:
                keys = list(set(chain.from_iterable(obj)))
                if (_plain_values(chain.from_iterable(map(dict.values, obj)))
                        and set(map(type, keys)) <= _PLAIN_SCALARS):
                    return keys
    except RuntimeError:  # changed size while read (another thread): take the careful path
        return None
    return None


_PLAIN_OR_LIST = _PLAIN_SCALARS | {list}


def _plain_values(values: Any) -> bool:
    """Whether every one of ``values`` (an iterable, read once) is a ``_PLAIN_SCALARS`` or an
    exact list of them."""
    values = list(values)
    kinds = set(map(type, values))
    if kinds <= _PLAIN_SCALARS:
        return True
    return kinds <= _PLAIN_OR_LIST and set(map(type, chain.from_iterable(
        [value for value in values if type(value) is list]))) <= _PLAIN_SCALARS


def _by_parts(obj: Any, options: ValueOptions, path: str) -> Serialized:
    walker = PartWalker(options, _dill_can)
    root = walker.visit(obj, path)
    texts = secret_texts(walker.secret_values)
    if texts:
        for holder in walker.placeholders:  # our own objects, not yet written
            object.__setattr__(holder, "repr", scrub_text(holder.repr, texts))
    holders = tuple(p.to_json() for p in walker.placeholders)
    redacted = tuple(walker.redacted)
    if isinstance(root, Placeholder) and root is not obj:
        return Serialized(None, None, root.reason, placeholders=holders, secret_texts=texts)
    errors = []
    for name in (("dill",) if walker.needs_dill else ("pickle", "dill")):
        buffer = io.BytesIO()
        try:
            if name == "pickle":
                _Pickler(buffer, walker.overrides).dump(root)
            else:
                _dill_pickler(buffer, walker.overrides).dump(root)
        except Exception as exc:  # noqa: BLE001 - user objects may raise anything here
            errors.append(f"{name}: {describe(exc)}")
            continue
        data = buffer.getvalue()
        if len(data) > options.max_payload_bytes:
            return Serialized(None, None, f"payload too large ({len(data)} bytes)",
                              placeholders=holders, redacted=redacted, secret_texts=texts)
        loadable, error = _test_load(name, data, options)
        return Serialized(data, name, error, loadable, holders, redacted, texts)
    return Serialized(None, None, "; ".join(errors), placeholders=holders, redacted=redacted,
                      secret_texts=texts)


def _test_load(serializer: str, data: bytes, options: ValueOptions
               ) -> tuple[bool | None, str | None]:
    """Whether ``data`` will load, judged from its opcodes (``loadability.judge``): loading it
    here would run the program's reconstructors while recording."""
    if not options.test_load or len(data) > options.test_load_limit:
        return None, None
    return judge(data)


def loads(serializer: str, data: bytes) -> Any:
    """Turn payload ``data`` written by ``serializer`` back into an object.

    This runs code from the payload: callers must have passed the trust check first
    (``snapstate_capture.trust.gate``). Raises whatever the unpickler raises.
    """
    if serializer == "dill":
        import dill

        return dill.loads(data)
    if serializer == "pickle":
        return pickle.loads(data)
    raise ValueError(f"unknown serializer {serializer!r}")
