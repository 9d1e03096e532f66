"""The per-frame part of line and call tracing: the local trace function of one frame.

``local_trace_function`` returns the closure ``sys.settrace`` calls for every ``line``,
``return`` and ``exception`` event of one traced frame (``tracer.Tracer`` installs it at the
frame's ``call`` event). It appends the frame's steps to the traced-step stream
(``trace_stream``): a ``line`` step re-reads only the names the line before rebound or may have
changed in place (``codeinfo``), scalars travel as themselves, anything else as the reference of
its captured preview and payload, sent again only when its content changed.

Hot path (issue 6 point 7): a line with nothing rebound costs one ``dict.get`` and one
``list.append`` of an int; a line that rebinds one scalar one ``f_locals`` read and one
``list.extend``. Everything else — the full check of a line's names, return and exception
steps, the values remembered — is the frame's ``call_frame.CallFrame``, shared with call
tracing. Every path catches its own errors: tracing never raises into the program.
"""

from __future__ import annotations

import types
from typing import Any

from .codeinfo import CodeInfo
from ..store.trace_items import LINE_BITS
from .value_encoder import ADDRESS_FLOOR, SCALAR_TYPES

_MISSING = object()


def local_trace_function(tracer: Any, frame: types.FrameType, info: CodeInfo, fid: int,
                         known: dict[str, tuple[Any, Any]]) -> Any:
    """Return the local trace function of one frame of ``tracer`` (a ``tracer.Tracer``).
    ``fid`` is the frame's id in the stream, ``known`` the ``{name: (object, stored value)}``
    its call step stored (so unchanged values are not stored again). The frame's state is a
    ``call_frame.CallFrame``; call tracing takes its ``local``, line tracing the closure below,
    which keeps the ``line`` event's fast path in closure cells and hands every other event and
    every full check to the state."""
    state = tracer.frame_state(frame, info, fid, known)
    if not tracer.lines:
        return state.local
    touched = info.touched
    app = tracer.items.append
    ext = tracer.items.extend
    scalar = SCALAR_TYPES
    floor = ADDRESS_FLOOR  # an int from here up may be a local's id: the full check decides
    fkey = fid << LINE_BITS
    known = state.known
    line_step = state._line_step
    other = state.local
    prev = state.prev

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
                    line_step(frame, names, fkey | prev)
                    return local
                if store is None:
                    app(fkey | prev)
                    return local
                if store.__class__ is not str:
                    line_step(frame, names, fkey | prev)
                    return local
                names = store
            value = frame.f_locals.get(names, _MISSING)
            if value.__class__ in scalar and (value.__class__ is not int or value < floor
                                                or value & 7):
                # (a stale ``known`` entry for ``names`` is dropped by the next full check)
                # Flat (name, value, key): no tuple kept alive per step, so no work for the
                # cyclic GC; one ``extend`` call, so threads never interleave inside it.
                ext((names, value, fkey | prev))
            else:
                line_step(frame, names, fkey | prev)
            return local
        state.prev = prev  # return, exception: the state's own steps, from the last line
        other(frame, event, arg)
        prev = state.prev
        if event == "return":
            if frame in tracer._suspended:  # a yield: it just suspended
                tracer._suspended[frame] = (local, fid)  # resumed, the frame gets this closure
            else:  # the frame is done: let go of its objects now
                # (this closure refers to itself, so it waits for the cyclic collector; what
                # ``known`` holds must not: a finished frame's locals outlived it and a
                # program's weakref callbacks ran late — boltons' test_min_id_map)
                known.clear()
                state.copies = None
        return local

    return local
