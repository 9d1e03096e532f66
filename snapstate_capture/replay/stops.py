"""Stopping a replay at a step: pdb or an interactive console on the real, live frame.

The replay child reaches the stop step inside the program's own call (a ``checkpoint``, an
``@step`` boundary, an effect): the frame handed over is the program's frame at that moment,
with the locals the recording holds (the step was just compared). When the user continues
(pdb's ``c``, or leaving the console), the replay goes on checking the remaining steps.
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

from ..store.reader import Step

#: pdb never stops inside snapstate's own modules, nor in the import machinery and ``runpy``
#: the replay child runs the program from (``n`` past the program's last line would).
SKIP = ["snapstate_capture", "snapstate_capture.*", "runpy", "importlib", "importlib.*"]


def banner(index: int, step: Step, what: str, *, fresh_line: bool = False) -> str:
    """What a stop says; ``fresh_line``: start it on a new line (``ends_mid_line``)."""
    where = f"{step.function} line {step.lineno}" if step.function else "?"
    if step.function and not step.lineno:  # a module's call step: no line has run yet
        where = f"{step.function}, before its first line"
    label = f" {step.label!r}" if step.label else ""
    start = "\n" if fresh_line else ""
    return (f"{start}snapstate: replay reached step {index} ({step.kind}{label} in {where}); "
            f"{what}")


def ends_mid_line(entry: dict[str, Any]) -> bool:
    """Whether a replay of a run started by ``entry`` stops in the middle of the program's
    output line: a test's timeline (its entry is ``python -m pytest`` on the one test) stops
    after pytest wrote the test file's name (``test_x.py ``) and before the test's outcome,
    so what the replay says there starts on a line of its own."""
    return entry.get("kind") == "module" and entry.get("module") == "pytest"


#: The name the stop step's own values (a checkpoint's extras — a framework's live state — an
#: effect's arguments and result) have in pdb and the console.
STEP_VALUES = "step_values"


def interact(mode: str, frame: types.FrameType, index: int, step: Step,
             values: dict[str, Any] | None = None, *, listen: str = "127.0.0.1:5678",
             then: str = "continues the replay", entry: dict[str, Any] | None = None) -> bool:
    """Run pdb (``mode == "pdb"``), a console, or wait for an IDE's debugger (``debugpy``,
    listening on ``listen``) on ``frame`` until the user continues; ``values`` (the step's live
    values as the recorder was handed them: an effect's arguments unwrapped from their
    ``PreviewOnly``) are ``step_values`` in pdb and the console; ``then`` says in the banner
    what continuing does; ``entry``: the run's (``ends_mid_line``). Returns True when the user
    quit pdb (``q``): the caller ends the replay there, as ``q`` ends a program run under
    pdb."""
    from ..capture.step_capture import PreviewOnly

    values = {name: value.value if isinstance(value, PreviewOnly) else value
              for name, value in (values or {}).items()}
    note = f"; the step's values are `{STEP_VALUES}`" if values else ""
    fresh = ends_mid_line(entry or {})
    if mode == "debugpy":
        from .dap_stop import wait_for_ide

        wait_for_ide(frame, banner(index, step, "the live frame is stopped there",
                                   fresh_line=fresh), listen)
    elif mode == "pdb":
        return debug(frame, banner(index, step, f"pdb on the live frame{note}; `c` {then}, "
                                                "`q` ends the replay here", fresh_line=fresh),
                     values, step=step if fresh else None)
    else:
        console(frame, banner(index, step, f"console with the frame's locals and globals"
                                          f"{note}; Ctrl-D {then}", fresh_line=fresh), values)
    return False


def debug(frame: types.FrameType, message: str, values: dict[str, Any] | None = None, *,
          step: Step | None = None) -> bool:
    """Enter pdb at ``frame`` now (not at its next line), with tracing set up so that ``n``,
    ``s``, breakpoints and ``c`` behave as after ``breakpoint()``. ``step``: the recorded step
    stopped at, given for a test's timeline; pdb's stack then starts where its recorded stack
    does (``recorded_bottom``).
    Returns True when the user quit at this stop (``q``, or the end of pdb's input)."""
    sys.stdout.write(message + "\n")
    if values:
        try:  # pdb evaluates in the frame's locals mapping: a name the function has not
            frame.f_locals[STEP_VALUES] = values  # (extra names are never written back)
        except Exception:  # noqa: BLE001 - a frame that takes no extra names: pdb as before
            pass
    debugger = _replay_pdb_class()(skip=SKIP)
    debugger.reset()
    debugger.outermost = recorded_bottom(frame, step) if step is not None else None
    current: types.FrameType | None = frame
    while current is not None:
        current.f_trace = debugger.trace_dispatch
        current.f_trace_lines = True  # call tracing turned a traced frame's lines off
        current = current.f_back
    # pdb's stack (``where``, ``up``) starts at the recorded stack's outermost frame (a test's
    # function, not pytest's forty frames under it) or else the program's, as after ``python
    # -m pdb program.py``: the replay child's frames below it are not the program's.
    debugger.botframe = debugger.bottom(frame)
    debugger.interaction(frame, None)
    if values:
        try:
            frame.f_locals.pop(STEP_VALUES, None)  # not the program's: never compared
        except Exception:  # noqa: BLE001
            pass
    # ``c`` with no breakpoint ends debugging (bdb.set_continue); anything else (n, s, a
    # breakpoint) needs the trace function, installed only now so pdb's own code is not traced.
    continuing = debugger.stopframe is debugger.botframe and debugger.stoplineno == -1
    if not debugger.quitting and (not continuing or debugger.breaks):
        sys.settrace(debugger.trace_dispatch)
    else:
        current = frame
        while current is not None:
            current.f_trace = None
            current = current.f_back
    return bool(debugger.quitting)


@functools.cache  # pdb is imported only when a stop needs it, and the class made once
def _replay_pdb_class() -> type:
    import pdb

    class ReplayPdb(pdb.Pdb):
        """pdb whose stack starts at the recorded stack's outermost frame (``outermost``,
        while it runs) or else the program's outermost frame at every stop
        (``program_bottom``), and whose session ends when that frame returns — what runs
        after it is the replay child's (or, after a recorded block, the rest of the program,
        untraced), as ``python -m pdb`` ends with the program — unless that frame was a
        module body run by an import: ``-m pkg.mod`` runs ``pkg``'s ``__init__`` first, and
        stepping goes on into ``pkg.mod``."""

        outermost: types.FrameType | None = None

        def bottom(self, f: types.FrameType) -> types.FrameType:
            """The frame pdb's stack starts at when stopped in ``f``."""
            current: types.FrameType | None = f
            while self.outermost is not None and current is not None:
                if current is self.outermost:
                    return current
                current = current.f_back
            return program_bottom(f)

        def setup(self, f: types.FrameType | None, tb: Any) -> None:
            if f is not None:
                self.botframe = self.bottom(f)
            super().setup(f, tb)

        def stop_here(self, frame: types.FrameType) -> bool:
            # import hooks the import system calls (a finder in site-packages, zipimport)
            # are no stop; a module body an import runs is
            if frame.f_code.co_name != "<module>" and frame.f_back is not None and \
                    _import_machinery(frame.f_back):
                return False
            return super().stop_here(frame)

        def dispatch_return(self, frame: types.FrameType, arg: Any) -> Any:
            traced = super().dispatch_return(frame, arg)
            if frame is self.botframe and not _imported(frame):
                self.set_continue()
                return None
            return traced

    return ReplayPdb


def _importlib(frame: types.FrameType) -> bool:
    """True when ``frame`` is the import system's own code."""
    return (str(frame.f_globals.get("__name__") or "").split(".")[0] == "importlib"
            or frame.f_code.co_filename.startswith("<frozen importlib"))


def _runpy(frame: types.FrameType) -> bool:
    """True when ``frame`` is ``runpy``'s (which runs the program's main module)."""
    return (frame.f_globals.get("__name__") == "runpy"
            or frame.f_code.co_filename.startswith("<frozen runpy"))


def _import_machinery(frame: types.FrameType) -> bool:
    """True when ``frame`` is the import system's or ``runpy``'s own code."""
    return _importlib(frame) or _runpy(frame)


def _imported(frame: types.FrameType) -> bool:
    """True when ``frame`` is a module body run by an import (its caller is importlib's)."""
    return frame.f_back is not None and _importlib(frame.f_back)


def _machinery(frame: types.FrameType) -> bool:
    """True when ``frame`` is the replay child's own: a file of snapstate's
    (``include.own_kind``), ``runpy`` (which started the child) or frozen importlib code."""
    from ..tracing.include import NOT_OWN, own_kind

    filename = frame.f_code.co_filename
    return filename.startswith("<frozen") or own_kind(filename) != NOT_OWN or _runpy(frame)


def program_bottom(frame: types.FrameType) -> types.FrameType:
    """The outermost frame of the program on ``frame``'s stack: the first frame, counted from
    the bottom, that is not the replay child's own (``_machinery``). ``frame`` itself when
    every frame below it is such machinery."""
    chain: list[types.FrameType] = []
    current: types.FrameType | None = frame
    while current is not None:
        chain.append(current)
        current = current.f_back
    for candidate in reversed(chain):
        if not _machinery(candidate):
            return candidate
    return frame


def recorded_bottom(frame: types.FrameType, step: Step) -> types.FrameType | None:
    """The live frame that is the outermost frame of ``step``'s recorded stack, ``frame``
    being its innermost: the recorded frames' functions are matched outward, innermost first,
    against the live frames' (a live frame the recording left out — a comprehension, a
    wrapper — is passed over). None when they do not all match, or when the step's frames
    cannot be read (pdb then starts at ``program_bottom``).

    Used for a test's timeline (``ends_mid_line``: the run is one test under pytest), whose
    recording starts at the test function: pytest's own forty frames beneath it would
    otherwise head every ``where``. A traced run of a script is not cut there: its recorded
    stacks hold only the traced frames, and the script's own calling frames are the
    program's."""
    try:
        names = [recorded.function for recorded in step.frames]
    except Exception:  # noqa: BLE001 - an unreadable frame record: the program's bottom
        return None
    current: types.FrameType | None = frame
    while names and current is not None:
        code = current.f_code
        if getattr(code, "co_qualname", code.co_name) == names[-1]:
            names.pop()
            if not names:
                return current
        current = current.f_back
    return None


def console(frame: types.FrameType, message: str, values: dict[str, Any] | None = None
            ) -> None:
    """An interactive console whose namespace is ``frame``'s globals updated with its locals
    (assignments there do not change the program's frame)."""
    namespace = dict(frame.f_globals)
    namespace.update(frame.f_locals)
    if values:
        namespace[STEP_VALUES] = values
    import code  # here, not at the top: a replay child imports only what the recording had

    code.InteractiveConsole(namespace).interact(banner=message, exitmsg="")
