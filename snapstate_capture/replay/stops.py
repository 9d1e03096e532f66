"""Stopping a replay at a step: pdb or an interactive console on the real, live frame.

The replay child reaches the stop step inside the program's own call (a ``checkpoint``, an
``@step`` boundary, an effect): the frame handed over is the program's frame at that moment,
with the locals the recording holds (the step was just compared). When the user continues
(pdb's ``c``, or leaving the console), the replay goes on checking the remaining steps.
"""

from __future__ import annotations

import code
import sys
import types

from ..store.reader import Step

#: pdb never stops inside snapstate's own modules.
SKIP = ["snapstate_capture", "snapstate_capture.*"]


def banner(index: int, step: Step, what: str) -> str:
    where = f"{step.function} line {step.lineno}" if step.function else "?"
    label = f" {step.label!r}" if step.label else ""
    return (f"snapstate: replay reached step {index} ({step.kind}{label} in {where}); "
            f"{what}")


def interact(mode: str, frame: types.FrameType, index: int, step: Step, *,
             listen: str = "127.0.0.1:5678") -> None:
    """Run pdb (``mode == "pdb"``), a console, or wait for an IDE's debugger (``debugpy``,
    listening on ``listen``) on ``frame`` until the user continues."""
    if mode == "debugpy":
        from .dap_stop import wait_for_ide

        wait_for_ide(frame, banner(index, step, "the live frame is stopped there"), listen)
    elif mode == "pdb":
        debug(frame, banner(index, step, "pdb on the live frame; `c` continues the replay"))
    else:
        console(frame, banner(index, step, "console with the frame's locals and globals; "
                                          "Ctrl-D continues the replay"))


def debug(frame: types.FrameType, message: str) -> None:
    """Enter pdb at ``frame`` now (not at its next line), with tracing set up so that ``n``,
    ``s``, breakpoints and ``c`` behave as after ``breakpoint()``."""
    import pdb

    sys.stdout.write(message + "\n")
    debugger = pdb.Pdb(skip=SKIP)
    debugger.reset()
    current: types.FrameType | None = frame
    while current is not None:
        current.f_trace = debugger.trace_dispatch
        debugger.botframe = current
        current = current.f_back
    debugger.interaction(frame, None)
    # ``c`` with no breakpoint ends debugging (bdb.set_continue); anything else (n, s, a
    # breakpoint) needs the trace function, installed only now so pdb's own code is not traced.
    continuing = debugger.stopframe is debugger.botframe and debugger.stoplineno == -1
    if not continuing or debugger.breaks:
        sys.settrace(debugger.trace_dispatch)
    else:
        current = frame
        while current is not None:
            current.f_trace = None
            current = current.f_back


def console(frame: types.FrameType, message: str) -> None:
    """An interactive console whose namespace is ``frame``'s globals updated with its locals
    (assignments there do not change the program's frame)."""
    namespace = dict(frame.f_globals)
    namespace.update(frame.f_locals)
    code.InteractiveConsole(namespace).interact(banner=message, exitmsg="")
