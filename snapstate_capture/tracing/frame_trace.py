"""The per-frame part of line and call tracing: the local trace function of one frame.

``local_trace_function`` returns the closure ``sys.settrace`` calls for every ``line``,
``return`` and ``exception`` event of one traced frame (``tracer.Tracer`` installs it at the
frame's ``call`` event). It appends the frame's steps to the traced-step stream
(``trace_stream``): a ``line`` step re-reads only the names the line before rebound or may have
changed in place (``codeinfo``), scalars travel as themselves, anything else as the reference of
its captured preview and payload, sent again only when its content changed.

Hot path (issue 6 point 7): a line with nothing rebound costs one ``dict.get`` and one
``list.append`` of an int; a line that rebinds one scalar one ``f_locals`` read and one
``list.extend``. Every other path catches its own errors: tracing never raises into the program.
"""

from __future__ import annotations

import time
import types
from typing import Any

from ..values import secret_shapes
from .call_frame import _BY_IDENTITY, CallFrame, _ends_await, _is_yield
from .codeinfo import CodeInfo
from ..store.trace_items import DELETED, EXCEPTION, LINE_BITS, REFRESH, RETURN
from .stream import INLINE_STR, SCALAR_TYPES

_MISSING = object()


def local_trace_function(tracer: Any, frame: types.FrameType, info: CodeInfo, fid: int,
                         pairs: list[Any], values: dict[str, Any] | None = None) -> Any:
    """Return the local trace function of one frame of ``tracer`` (a ``tracer.Tracer``): a closure
    holding the frame's state. ``fid`` is the frame's id in the stream, ``pairs`` the
    ``[name, ref, ...]`` its call step stored (so unchanged values are not stored again),
    ``values`` the frame's locals they were read from (None: read again). Call tracing gets a
    ``call_frame.CallFrame``'s instead: the same steps, far fewer objects made per call."""
    if not tracer.lines:
        return CallFrame(tracer, frame, info, fid, pairs, values).local
    touched = info.touched
    secret = info.secret  # names that may be secret: redacted when ``redacts`` says so
    redacts = tracer.encoder.options.values.redacts
    shaped = secret_shapes.find  # a credential by its form: captured (and cut out), not inline
    app = tracer.items.append
    ext = tracer.items.extend
    encoder = tracer.encoder
    scalar = SCALAR_TYPES
    inline = INLINE_STR
    fkey = fid << LINE_BITS
    lines = tracer.lines
    known: dict[str, tuple[Any, Any]] = {}  # name -> (object, ref) of non-scalars
    prev = frame.f_lineno

    def delta(frame: types.FrameType, names: Any, out: list[Any]) -> None:
        loc = frame.f_locals
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
            if secret and name in secret and value is not _MISSING and redacts(name, value):
                out.append(name)
                out.append(encoder.redacted(value))
                known.pop(name, None)
            elif cls in scalar or (cls is str and len(value) <= inline and not shaped(value)):
                out.append(name)
                out.append(value)
                if name in known:
                    del known[name]
            elif value is _MISSING:
                if not info.module or name in known:
                    out.append(name)
                    out.append(DELETED)
                    known.pop(name, None)
            else:
                ref = changed_ref(name, value)
                if ref is not None:
                    out.append(name)
                    out.append(ref)
        for name in loaded:
            if name in known:  # held a non-scalar: maybe changed in place
                value = loc.get(name, _MISSING)
                cls = value.__class__
                if cls in scalar or (cls is str and len(value) <= inline
                                     and not shaped(value)):
                    del known[name]  # rebound to a scalar on the fast path
                elif value is not _MISSING:
                    ref = changed_ref(name, value)
                    if ref is not None:
                        out.append(name)
                        out.append(ref)

    def changed_ref(name: str, value: Any) -> Any:
        """The reference to store for ``name`` now, or None when its content is unchanged
        (the encoder answers equal contents from its cache, without a new capture)."""
        last = known.get(name)
        if last is not None and last[0] is value and isinstance(value, _BY_IDENTITY):
            return None
        ref = encoder.capture(value, name)
        if last is not None and last[1] == ref:
            if last[0] is not value:
                known[name] = (value, ref)
            return None
        known[name] = (value, ref)
        return ref

    def finish(frame: types.FrameType, out: list[Any]) -> None:
        if lines:
            names = touched.get(prev)
            if names is not None:
                delta(frame, names, out)
        else:
            snapshot_changes(frame, out)

    def snapshot_changes(frame: types.FrameType, out: list[Any]) -> None:
        for name, value in list(frame.f_locals.items()):
            if info.module and name.startswith("__") and name.endswith("__"):
                continue
            cls = value.__class__
            if secret and name in secret and redacts(name, value):
                last = known.get(name)
                if last is None or last[0] is not value:
                    known[name] = (value, None)
                    out.append(name)
                    out.append(encoder.redacted(value))
            elif cls in scalar or (cls is str and len(value) <= inline and not shaped(value)):
                last = known.get(name)
                if last is not None and last[0].__class__ is cls and last[0] == value:
                    continue
                known[name] = (value, value)
                out.append(name)
                out.append(value)
            else:
                ref = changed_ref(name, value)
                if ref is not None:
                    out.append(name)
                    out.append(ref)

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        nonlocal prev
        if event == "line":
            # Hot path: keep it to a few operations (issue 6 point 7). Measured variants:
            # one extend beats a kept tuple (~10%) and three appends; a helper call here
            # costs ~10% of a step.
            names = touched.get(prev)
            prev = frame.f_lineno
            if names is None:
                app(fkey | prev)
                return local
            if names.__class__ is not str:
                store, loaded = names
                if known and not known.keys().isdisjoint(loaded):
                    line_step(frame, names)
                    return local
                if store is None:
                    app(fkey | prev)
                    return local
                if store.__class__ is not str:
                    line_step(frame, names)
                    return local
                names = store
            value = frame.f_locals.get(names, _MISSING)
            if value.__class__ in scalar:
                # (a stale ``known`` entry for ``names`` is dropped by the next full check)
                # Flat (name, value, key): no tuple kept alive per step, so no work for the
                # cyclic GC; one ``extend`` call, so threads never interleave inside it.
                ext((names, value, fkey | prev))
            else:
                line_step(frame, names)
            return local
        try:
            if event == "return":
                suspended = info.suspends and _is_yield(frame)
                out = [RETURN, fid, frame.f_lineno, time.time(), time.monotonic(),
                       "yield" if suspended else None, encode_value(arg, "return")]
                finish(frame, out)
                app(tuple(out))
                prev = frame.f_lineno
                if suspended:
                    tracer._suspend(frame, local, fid)
                else:
                    tracer._fids.pop(frame, None)
                    tracer._refresh.pop(fid, None)
                return local
            if event == "exception":
                if info.suspends and arg[0] is StopIteration and _ends_await(frame):
                    return local  # an await (yield from) finished: not an exception step
                exc = arg[1]
                out = [EXCEPTION, fid, frame.f_lineno, time.time(), time.monotonic(),
                       type(exc).__name__, encoder.capture(exc, None)]
                finish(frame, out)
                app(tuple(out))
                prev = frame.f_lineno
        except Exception:  # noqa: BLE001 - never raise into the program
            pass
        return local

    def refresh(frame: types.FrameType) -> None:
        """Call tracing: append this frame's line and the locals changed since its last step
        as a ``REFRESH`` item (not a step), when either changed."""
        nonlocal prev
        out = [REFRESH, fid, frame.f_lineno]
        try:
            snapshot_changes(frame, out)
        except Exception:  # noqa: BLE001 - never raise into the program
            pass
        if len(out) > 3 or out[2] != prev:
            app(tuple(out))
        prev = out[2]

    def line_step(frame: types.FrameType, names: Any) -> None:
        out = [fkey | prev]
        try:
            delta(frame, names, out)
        except Exception:  # noqa: BLE001 - never raise into the program
            pass
        app(tuple(out) if len(out) > 1 else out[0])

    def encode_value(value: Any, name: str) -> Any:
        cls = value.__class__
        if cls in scalar or (cls is str and len(value) <= inline and not shaped(value)):
            return value
        return encoder.capture(value, name)

    if not lines:
        tracer._refresh[fid] = refresh
    # Remember what the call step stored, so unchanged values are not stored again.
    current = frame.f_locals
    for name, ref in zip(pairs[::2], pairs[1::2]):
        value = current.get(name, _MISSING)
        if value is not _MISSING and (not lines or type(ref) is tuple):
            known[name] = (value, ref)
    return local
