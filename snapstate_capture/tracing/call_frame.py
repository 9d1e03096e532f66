"""The per-frame part of call tracing: one small object per traced frame instead of a closure.

``frame_trace.local_trace_function`` builds, for each traced frame, eight nested functions and
the cells they share — some forty objects the cyclic garbage collector tracks, made at every
call. Line tracing needs that shape (its ``line`` events read closure cells, the fastest path
there is). Call tracing sees no line events, and there those allocations were the cost: a
collection of the youngest generation every twenty-five calls, a quarter of a traced call's
time. ``CallFrame`` holds the same state in slots (one object and one dict per frame, and no
reference cycle: it is freed with its frame, and so are the values it remembers, where the
closures' cycle kept them until the next collection): the call step's values remembered,
``return`` and ``exception`` steps with the locals changed since the frame's last step, and the
``REFRESH`` catch-up of a caller (``refresh``). A ``line`` event only reaches its ``local`` when
another tracer (coverage) asked for lines. Line tracing uses it too, for everything but the
``line`` event itself, whose fast path stays a closure (``frame_trace``).
"""

from __future__ import annotations

import marshal
import types
import weakref
from typing import Any

from ..clocks import Clocks
from ..program_signals import signal_of
from ..capture import chunked
from ..capture.chunk_capture import identity as _identity
from ..capture.detectors import IMMUTABLE
from ..values import secret_shapes
from ..store.hashing import content_hash
from ..values.addresses import release_locals_snapshot
from .by_value import local_class
from .codeinfo import CodeInfo
from ..store.trace_items import DELETED, EXCEPTION, LINE_BITS, REFRESH, RETURN
from .value_encoder import (ADDRESS_FLOOR, CHUNKED_MIN_LENGTH, INLINE_STR, SCALAR_TYPES,
                            addressed)

_YIELD_VALUE = __import__("dis").opmap.get("YIELD_VALUE", -1)
#: The instructions a frame returns by (3.12 adds RETURN_CONST); any other last instruction at
#: a ``return`` event means an exception is leaving the frame.
_RETURN_OPS = frozenset(__import__("dis").opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST")
                        if name in __import__("dis").opmap)
#: Where an ``await`` / ``yield from`` ends: the awaited iterator's ``StopIteration`` raises an
#: ``exception`` event there (3.10: YIELD_FROM, 3.11: SEND) — the normal end of a wait, no error.
_AWAIT_OPS = frozenset(__import__("dis").opmap[name] for name in ("SEND", "YIELD_FROM")
                       if name in __import__("dis").opmap)
#: Objects compared by identity only when re-checked (re-pickling a module is pointless); a
#: class is only when pickle names it (``by_value.local_class``): dill writes a local class's
#: namespace.
_BY_IDENTITY = (types.ModuleType, types.FunctionType, type, types.BuiltinFunctionType,
                types.MethodType)
#: Values that cannot change in place: the same object is the same content (a long text
#: handed down a call chain is not copied and hashed again at each step of each frame; a
#: date, a Decimal, a UUID: ``detectors.IMMUTABLE``).
_IMMUTABLE = frozenset({str, bytes}) | IMMUTABLE


def _same_marshal(value: Any, key: str) -> bool:
    """Whether ``value``'s marshal copy hashes to ``key`` (a ``("m", key)`` reference):
    a list or dict handed to a call was stored whole at the call step by its marshal copy,
    and its first capture by chunks at the next step (the return) pickled and previewed every
    chunk again — 2.6 ms a call for a 1,000-entry dict of lists (helper-37: cachetools' LFU
    test, over 300 s recorded against 0.17 s plain). Its hash again costs a C-speed copy;
    chunks are taken only once it changed (then each step costs what changed)."""
    try:
        return content_hash(marshal.dumps(value)).hex() == key
    except (ValueError, TypeError, RecursionError):
        return False


class Held(weakref.ref):
    """A frame's stored object, held weakly (``held``): what a frame's ``known`` keeps of an
    object that takes weak references, so the object dies when the program lets go of it. A
    caller's local handed to a traced call was kept alive until that caller's next step —
    a test's ``del n; gc.collect(); assert ref() is None`` failed recorded, a ``__del__`` and
    a ``weakref.finalize`` did not run (helper-37). Its own class, so a local that is itself
    a weak reference is never taken for one of these."""

    __slots__ = ()


def held(value: Any) -> Any:
    """What ``known`` keeps of ``value``: a ``Held`` weak reference when its class takes
    them, else the object itself (a list, a dict, a tuple: their ids are compared while held)."""
    if value.__class__.__weakrefoffset__:
        try:
            return Held(value)
        except TypeError:
            pass
    return value


def same(kept: Any, value: Any) -> bool:
    """Whether ``kept`` (``held``'s) is ``value`` — for a weak one, while it is alive."""
    return kept is value or (kept.__class__ is Held and kept() is value)
_MISSING = object()
_thread_id = __import__("threading").get_ident
_SCALAR = SCALAR_TYPES
_INLINE = INLINE_STR
#: An int from ``_FLOOR`` up that is the id of a local is no scalar here
#: (``value_encoder.addressed``).
_FLOOR = ADDRESS_FLOOR
_SHAPED = secret_shapes.find
#: Containers whose length a module body's catch-up compares (``CallFrame._rebound``).
_SIZED = frozenset({list, dict, set, bytearray})
#: Same-object checks without a capture (``CallFrame._changed_ref``, ``_copy_of``): a
#: ``bytearray`` of at least ``BUFFER_BYTES`` is compared with the bytes it had when last
#: stored (one ``memcmp``; a shorter one is captured again, cheaper than keeping a copy); a list
#: or dict of ``_SCALARS_MIN`` or more immutable scalars (strings, numbers; a dict: keys and
#: values), and fewer than a chunk of them (longer ones are captured by chunks, which compare
#: their elements' identities themselves), by its elements' identities — a copy's item array
#: read at C speed, the copy keeping the elements alive so no address is reused.
BUFFER_BYTES = 4096
_SCALARS_MIN = 16
_SCALARS_MAX = chunked.SCALAR_CHUNK
_SCALAR_ELEMENTS = frozenset({str, int, float, bool, type(None), bytes, complex})


class CallFrame:
    """The call-tracing state of one frame (see the module docstring). ``local`` is its local
    trace function; ``refresh`` catches the frame up when one of its callees is called."""

    __slots__ = ("info", "fid", "known", "prev", "secret", "sizes", "copies", "chunked")

    #: What all frames of one tracer share, set on its subclass (``for_tracer``): the tracer;
    #: ``lines`` — line tracing: a return or exception step carries the last line's touched
    #: names; call tracing: every local changed since the frame's last step; its encoder, the
    #: encoder's ``redacts`` and the stream's ``items.append``.
    tracer: Any
    lines: bool
    encoder: Any
    redacts: Any
    app: Any

    @classmethod
    def for_tracer(cls, tracer: Any) -> type[CallFrame]:
        """The class of ``tracer``'s frame states: what they share is kept once, on the class,
        instead of in each frame's slots (five stores less at every call)."""
        return type(cls.__name__, (cls,), {
            "__slots__": (), "tracer": tracer, "lines": tracer.lines, "encoder": tracer.encoder,
            "redacts": tracer.encoder.options.values.redacts, "app": tracer.items.append})

    def __init__(self, frame: types.FrameType, info: CodeInfo, fid: int,
                 known: dict[str, tuple[Any, Any]]) -> None:
        """The state of ``frame`` (call this on a ``for_tracer`` class), ``fid`` its id in the
        stream, ``known`` what its call step stored, ``{name: (object, stored value)}``."""
        tracer = self.tracer
        self.info = info
        self.fid = fid
        self.secret = info.secret
        self.prev = frame.f_lineno
        self.sizes: dict[str, int] | None = None  # module or class body: container lengths
        #: name -> what the object last stored under it is compared with while it is the same
        #: object (``_copy_of``: a big bytearray's bytes, a short scalar list's identities)
        self.copies: dict[str, Any] | None = None
        #: the names whose big list or dict was last captured by chunks (``_changed_ref``)
        self.chunked: set[str] | None = None
        # What the call step stored (``known``, taken over), so unchanged values are not
        # stored again: name -> (object, ref); line tracing: non-scalars only.
        if self.lines:
            known = {name: seen for name, seen in known.items() if seen[1].__class__ is tuple}
        else:
            tracer._refresh[fid] = self
        self.known = known

    def _changed_ref(self, name: str, value: Any) -> Any:
        """The reference to store for ``name`` now, or None when its content is unchanged.

        The object last stored under ``name`` is compared with the copy ``_copy_of`` kept of it
        instead of being captured again: a generator over a 1 MB sieve (more-itertools'
        ``sieve``, resumed 78,498 times in its own test suite) re-hashed the whole buffer at
        every resume, hours for one test; a caller's list of words was copied with marshal and
        hashed at each of the 200 calls it made per text."""
        known = self.known
        last = known.get(name)
        cls = value.__class__
        encoder = self.encoder
        copy = None
        if last is not None and same(last[0], value):
            if cls in _IMMUTABLE or isinstance(value, _BY_IDENTITY) and not (
                    isinstance(value, type) and local_class(value)):
                return None
            if last[1].__class__ is tuple and last[1][0] in encoder.bounded_keys:
                # bounded at its last step and still the same object (held here, so its id is
                # its own): bounded again, without the copy or count that found it big —
                # boltons' BarrelList copied its 0.5 MB of lists with marshal at every call
                return self._stored(name, value, encoder.bounded(value, name), last)
            seen = self.copies.get(name) if self.copies is not None else None
            if seen is not None:
                if cls is bytearray:
                    if value == seen:  # bytearray == bytes: by content
                        return None
                else:
                    copy = _scalar_copy(value, cls, typed=False)
                    if copy[1] == seen[1] and len(copy[0]) == len(seen[0]):
                        return None  # the same immutable objects, in the same places
        # taken before the capture: a change by another thread in between shows as a
        # difference next time, never as a capture older than its copy
        copy = _copy_of(value, cls, copy)
        if copy is not None:
            if self.copies is None:
                self.copies = {}
            self.copies[name] = copy
        elif self.copies is not None:
            self.copies.pop(name, None)
        if (cls is list or cls is dict) and len(value) >= CHUNKED_MIN_LENGTH:
            if (last is not None and last[1].__class__ is tuple and last[1][0] == "m"
                    and (self.chunked is None or name not in self.chunked)
                    and _same_marshal(value, last[1][1])):
                return None  # stored whole by its marshal copy last, and still that
            # a big list or dict: captured at the cost of what changed since its last capture
            # here (an ``out.append`` per callee call was copied and hashed whole each time)
            if self.chunked is None:
                self.chunked = set()
            self.chunked.add(name)  # taken or refused there: let go of at the frame's return
            ref = encoder.chunked(self.fid, name, value)
            if ref is not None:
                return self._stored(name, value, ref, last)
        return self._stored(name, value, encoder.capture(value, name), last)

    def _stored(self, name: str, value: Any, ref: Any, last: Any) -> Any:
        """``ref``, the new capture of ``name``, remembered; None when it is what was stored
        last (``last``: ``(object, ref)`` or None)."""
        known = self.known
        if last is not None and last[1] == ref:
            if not same(last[0], value):
                known[name] = (held(value), ref)
            return None
        known[name] = (held(value), ref)
        return ref

    def _snapshot_changes(self, frame: types.FrameType, out: list[Any]) -> dict[str, Any]:
        """Append the locals changed since the frame's last step to ``out``; returns the
        ``f_locals`` read."""
        module = self.info.module
        known, secret = self.known, self.secret
        values = frame.f_locals
        for name, value in list(values.items()):
            if module and name.startswith("__") and name.endswith("__"):
                continue
            if value.__class__ in _SCALAR and not (secret and name in secret) and not (
                    value.__class__ is int and value >= _FLOOR and addressed(value)):
                # ``_snapshot_one``'s scalar case, inline: most locals of most calls
                last = known.get(name)
                if last is None or last[0].__class__ is not value.__class__ or last[0] != value:
                    known[name] = (value, value)
                    out.append(name)
                    out.append(value)
                continue
            self._snapshot_one(name, value, out)
        if len(known) != len(values):
            # (every local is in ``known`` now, so the same count means no name went)
            self._deleted(values, out)
        return values

    def _deleted(self, values: dict[str, Any], out: list[Any]) -> None:
        """Names stored before that the frame no longer has (``del x``): stored as deleted,
        and their objects let go of (held here, a deleted object outlived its ``del``)."""
        known = self.known
        if known.keys() <= values.keys():
            return  # the usual case, decided at C speed (no set is built)
        for name in known.keys() - values.keys():
            del known[name]
            if self.copies is not None:
                self.copies.pop(name, None)
            if self.sizes is not None:
                self.sizes.pop(name, None)
            out.append(name)
            out.append(DELETED)

    def _snapshot_one(self, name: str, value: Any, out: list[Any]) -> None:
        """Append ``name`` and its new reference to ``out`` when its content changed since
        this frame's last step."""
        known, secret = self.known, self.secret
        cls = value.__class__
        if secret and name in secret and self.redacts(name, value):
            last = known.get(name)
            if last is None or last[0] is not value:
                known[name] = (value, None)
                out.append(name)
                out.append(self.encoder.redacted(value))
        elif (cls in _SCALAR and not (cls is int and value >= _FLOOR and addressed(value))
              or (cls is str and len(value) <= _INLINE and not _SHAPED(value))):
            last = known.get(name)
            if last is not None and last[0].__class__ is cls and last[0] == value:
                return
            known[name] = (value, value)
            out.append(name)
            out.append(value)
        else:
            ref = self._changed_ref(name, value)
            if ref is not None:
                out.append(name)
                out.append(ref)

    def _rebound(self, frame: types.FrameType, out: list[Any]) -> None:
        """``_snapshot_changes`` for a module or class body's catch-up: a non-scalar that is
        the object last stored under its name is skipped without being captured again."""
        known, sizes = self.known, self.sizes
        if sizes is None:
            sizes = self.sizes = {}
        for name, value in list(frame.f_locals.items()):
            last = known.get(name)
            cls = value.__class__
            if last is not None and same(last[0], value):
                if cls in _SIZED:
                    if sizes.get(name) == len(value):
                        continue
                elif cls not in _SCALAR:  # the same object, immutable or not looked into
                    continue
            if name.startswith("__") and name.endswith("__"):
                continue
            self._snapshot_one(name, value, out)
            if cls in _SIZED:
                sizes[name] = len(value)
        self._deleted(frame.f_locals, out)

    def local(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self._line(frame)
            return self.local
        info, fid = self.info, self.fid
        try:
            if event == "return":
                suspended = info.suspends and _is_yield(frame)
                raised = arg is None and not suspended and _is_unwinding(frame)
                out = [RETURN, fid, frame.f_lineno, Clocks.time(), Clocks.monotonic(),
                       "yield" if suspended else "raised" if raised else None, None]
                # a returned local is captured once (``memo``): ``encoder.begin_event()``
                # and ``end_event()``, inline (two calls less at every return)
                encoder = self.encoder
                mine = not encoder.event
                if mine:
                    encoder.event = _thread_id()
                try:
                    if self.lines:
                        self._finish(frame, out)
                    else:
                        self._snapshot_changes(frame, out)
                    if not raised and (arg.__class__ not in _SCALAR or (
                            arg.__class__ is int and arg >= _FLOOR and addressed(arg))):
                        out[6] = self._encode_value(arg, "return")
                    else:
                        out[6] = arg  # a scalar as itself, or None (raised)
                finally:
                    if mine:
                        encoder.event = 0
                        encoder.memo = None
                self.app(tuple(out))
                self.prev = frame.f_lineno
                tracer = self.tracer
                if suspended:
                    tracer._suspend(frame, self.local, fid)
                else:
                    tracer._fids.pop(frame, None)
                    tracer._refresh.pop(fid, None)
                    if self.chunked is not None:
                        encoder.forget_chunked(fid, self.chunked)
                return self.local
            if event == "exception":
                if info.suspends and arg[0] is StopIteration and _ends_await(frame):
                    return self.local  # an await (yield from) finished: not an exception step
                exc = arg[1]
                out = [EXCEPTION, fid, frame.f_lineno, Clocks.time(), Clocks.monotonic(),
                       type(exc).__name__, self.encoder.capture(exc, None)]
                self._finish(frame, out)
                self.app(tuple(out))
                self.prev = frame.f_lineno
        except Exception as exc:  # noqa: BLE001 - never raise into the program
            if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                raise  # what the program's signal handler raised here: the program's
        return self.local

    def _finish(self, frame: types.FrameType, out: list[Any]) -> None:
        """The locals a return or exception step carries (see ``lines``)."""
        if not self.lines:
            self._snapshot_changes(frame, out)
            return
        names = self.info.touched.get(self.prev)
        if names is not None:
            self._delta(frame, names, out)

    def refresh(self, frame: types.FrameType) -> None:
        """Append this frame's line and the locals changed since its last step as a
        ``REFRESH`` item (not a step), when either changed.

        A module or class body (``info.module``) is caught up by name, identity and length
        only: a name bound to another object, a changed scalar, or a list, dict, set or
        bytearray whose length changed (``results.append(...)`` in a script's loop) is
        captured; an object it still holds otherwise is not looked into — its globals are
        hundreds of values, and the catch-up runs at every call the body makes (each
        decorator, each class statement, each call of a script's loop), where nearly all are
        unchanged. An object changed in place without a change of length is stored at the
        body's next step of its own (an exception, its return at the end of the script or
        import), which checks every value in full."""
        out = [REFRESH, self.fid, frame.f_lineno]
        try:
            if self.info.module:
                self._rebound(frame, out)
            else:
                values = self._snapshot_changes(frame, out)
                release_locals_snapshot(frame, values, calling=True)
                del values
        except Exception as exc:  # noqa: BLE001 - never raise into the program
            if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                raise  # what the program's signal handler raised here: the program's
        if len(out) > 3 or out[2] != self.prev:
            self.app(tuple(out))
        self.prev = out[2]

    def _encode_value(self, value: Any, name: str) -> Any:
        """A step value (``return``): a scalar as itself, else a reference — the one a local
        holding the same object got in this event, if one did."""
        cls = value.__class__
        if (cls in _SCALAR and not (cls is int and value >= _FLOOR and addressed(value))
                or (cls is str and len(value) <= _INLINE and not _SHAPED(value))):
            return value
        return self.encoder.capture(value, name, any_name=True)

    # -- line events: in call tracing only when a chained tracer (coverage) asked for them --
    def _line(self, frame: types.FrameType) -> None:
        """A ``line`` step, as ``frame_trace``'s line closure records it: the names the line
        before touched, re-read."""
        names = self.info.touched.get(self.prev)
        self.prev = frame.f_lineno
        key = (self.fid << LINE_BITS) | self.prev
        if names is None:
            self.app(key)
            return
        if names.__class__ is not str:
            store, loaded = names
            if self.known and not self.known.keys().isdisjoint(loaded):
                self._line_step(frame, names, key)
                return
            if store is None:
                self.app(key)
                return
            if store.__class__ is not str:
                self._line_step(frame, names, key)
                return
            names = store
        value = frame.f_locals.get(names, _MISSING)
        if value.__class__ in _SCALAR and (value.__class__ is not int or value < _FLOOR
                                           or value & 7):
            self.tracer.items.extend((names, value, key))
        else:
            self._line_step(frame, names, key)

    def _line_step(self, frame: types.FrameType, names: Any, key: int) -> None:
        """A line step whose touched names need the full check (``_delta``)."""
        out: list[Any] = [key]
        try:
            self._delta(frame, names, out)
        except Exception as exc:  # noqa: BLE001 - never raise into the program
            if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                raise  # what the program's signal handler raised here: the program's
        self.app(tuple(out) if len(out) > 1 else out[0])

    def _delta(self, frame: types.FrameType, names: Any, out: list[Any]) -> None:
        loc, info, known, secret = frame.f_locals, self.info, self.known, self.secret
        if names.__class__ is str:
            stored, loaded = (names,), ()
        else:
            stored, loaded = names
            if stored is None:
                stored = ()
            elif stored.__class__ is str:
                stored = (stored,)
        for name in stored:
            value = loc.get(name, _MISSING)
            cls = value.__class__
            if secret and name in secret and value is not _MISSING and self.redacts(name, value):
                out.append(name)
                out.append(self.encoder.redacted(value))
                known.pop(name, None)
            elif (cls in _SCALAR and not (cls is int and value >= _FLOOR and addressed(value))
                  or (cls is str and len(value) <= _INLINE and not _SHAPED(value))):
                out.append(name)
                out.append(value)
                known.pop(name, None)
            elif value is _MISSING:
                if not info.module or name in known:
                    out.append(name)
                    out.append(DELETED)
                    known.pop(name, None)
            else:
                ref = self._changed_ref(name, value)
                if ref is not None:
                    out.append(name)
                    out.append(ref)
        for name in loaded:
            if name in known:  # held a non-scalar: maybe changed in place
                value = loc.get(name, _MISSING)
                cls = value.__class__
                if (cls in _SCALAR and not (cls is int and value >= _FLOOR and addressed(value))
                        or (cls is str and len(value) <= _INLINE and not _SHAPED(value))):
                    del known[name]
                elif value is not _MISSING:
                    ref = self._changed_ref(name, value)
                    if ref is not None:
                        out.append(name)
                        out.append(ref)


def _copy_of(value: Any, cls: type, scalars: tuple[list[Any], bytes] | None) -> Any:
    """What ``CallFrame._changed_ref`` compares ``value`` with while it stays the same object
    (see ``BUFFER_BYTES``), or None: the bytes of a big ``bytearray``; ``(elements, their
    identities)`` of a list or dict of scalars — ``scalars``, its untyped copy just made, when
    there is one."""
    if cls is bytearray:
        return bytes(value) if len(value) >= BUFFER_BYTES else None
    if (cls is list or cls is dict) and _SCALARS_MIN <= len(value) < _SCALARS_MAX:
        if scalars is not None:
            return scalars if set(map(type, scalars[0])) <= _SCALAR_ELEMENTS else None
        return _scalar_copy(value, cls, typed=True)
    return None


def _scalar_copy(value: Any, cls: type, typed: bool) -> Any:
    """``(elements, their identities)`` of a list or dict (keys then values); with ``typed``,
    None unless every element is an immutable scalar."""
    kept = value[:] if cls is list else [*value, *dict.values(value)]
    if typed and not set(map(type, kept)) <= _SCALAR_ELEMENTS:
        return None
    return kept, _identity(kept)


def _ends_await(frame: types.FrameType) -> bool:
    try:
        return frame.f_code.co_code[frame.f_lasti] in _AWAIT_OPS
    except (IndexError, AttributeError):
        return False


def _is_unwinding(frame: types.FrameType) -> bool:
    """Whether a ``return`` event is an exception leaving the frame (python reports that as a
    return of None): its last instruction is not a return."""
    try:
        return frame.f_code.co_code[frame.f_lasti] not in _RETURN_OPS
    except (IndexError, AttributeError):
        return False


def _is_yield(frame: types.FrameType) -> bool:
    try:
        return frame.f_code.co_code[frame.f_lasti] == _YIELD_VALUE
    except (IndexError, AttributeError):
        return False
