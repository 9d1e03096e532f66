"""Stopping a replay at a step in the user's IDE: debugpy, for any DAP client (VS Code,
PyCharm, nvim-dap).

At the stop step the replay child starts debugpy's server on ``listen`` (only then: the steps
before it replay at full speed, untraced), waits for a client to attach, and suspends the
thread with the program's own frame on top — at the line the step was recorded at, with its
live locals, as ``--pdb`` does. Continuing in the IDE goes on with the replay, which checks the
remaining steps; stepping and breakpoints work from there. Stepping skips snapstate's own
modules (debugpy's ``PYDEVD_FILTERS``).

debugpy has no public call for "suspend showing this frame" (``debugpy.breakpoint()`` stops in
its caller, which is snapstate's frame, at its next line), so this uses pydevd's suspend calls,
which debugpy vendors; ``suspend_at`` falls back to ``pydevd.settrace(stop_at_frame=...)`` (the
frame's next line) if they are missing.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import types

from ..errors import SnapStateError

#: Where debugpy listens unless ``--listen`` says otherwise (debugpy's own default port).
DEFAULT_LISTEN = "127.0.0.1:5678"
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_listen(text: str) -> tuple[str, int]:
    """``"HOST:PORT"`` or ``"PORT"`` → ``(host, port)``; raises ``ValueError`` with the reason."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen {text}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return (host.strip("[]") or "127.0.0.1"), int(port)


def wait_for_ide(frame: types.FrameType, message: str, listen: str) -> None:
    """Listen on ``listen``, print ``message`` and where, wait for a DAP client, then suspend
    with ``frame`` on top until the client continues. Raises ``SnapStateError`` when debugpy
    is not installed or cannot listen there."""
    try:
        import debugpy
    except ImportError:
        raise SnapStateError("--debugpy needs debugpy: pip install 'snapstate[debug]'") from None
    # Stepping never enters snapstate's frames (read by pydevd when debugpy starts it).
    os.environ.setdefault("PYDEVD_FILTERS", json.dumps({f"{_PACKAGE_DIR}/**": True}))
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # no frozen-modules note
    try:
        host, port = debugpy.listen(parse_listen(listen))
    except (OSError, RuntimeError, ValueError) as exc:
        raise SnapStateError(f"--debugpy: cannot listen on {listen}: {exc}") from None
    sys.stdout.write(f"{message}\nsnapstate: waiting for a debugger to attach on {host}:{port} "
                     "(VS Code: a Python \"attach\" configuration with that host and port)\n")
    sys.stdout.flush()
    _quiet_settrace_warning()
    debugpy.wait_for_client()
    suspend_at(frame)


def _quiet_settrace_warning() -> None:
    """pydevd warns ("PYDEV DEBUGGER WARNING: sys.settrace() should not be used …", four
    times on stderr) at each place the replay's tracer hands the trace function on, which it
    does on purpose (``suspend_at``, the tracer's pause and resume): its own flag off, where
    pydevd has it (a vendored module's attribute: absent, nothing happens)."""
    try:
        import pydevd_tracing

        pydevd_tracing.TracingFunctionHolder._warn = False
    except (ImportError, AttributeError):
        pass


def suspend_at(frame: types.FrameType) -> None:
    """Suspend the current thread in the attached debugger with ``frame`` as its top frame (at
    its current line); returns when the client continues, with tracing set up for stepping."""
    import pydevd  # vendored by debugpy, importable once debugpy.listen ran

    py_db = pydevd.get_global_debugger()
    thread = threading.current_thread()
    try:
        from _pydevd_bundle.pydevd_comm_constants import CMD_SET_BREAK

        suspend, wait = py_db.set_suspend, py_db.do_wait_suspend
    except (ImportError, AttributeError):
        pydevd.settrace(suspend=True, trace_only_current_thread=True,
                        patch_multiprocessing=False, stop_at_frame=frame, notify_stdin=False)
        return
    # No trace event may happen between the two calls: pydevd suspends a thread marked as
    # suspended at its first traced event, which would be in snapstate's or pydevd's code.
    tracer = sys.gettrace()
    sys.settrace(None)
    try:
        suspend(thread, CMD_SET_BREAK)
        wait(thread, frame, "line", None)
    finally:
        sys.settrace(tracer)
    py_db.set_trace_for_frame_and_parents(thread.ident, frame)  # n, s, breakpoints from here
