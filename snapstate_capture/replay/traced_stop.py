"""Stopping a traced replay at a call step: pdb, a console or an IDE's debugger on the live frame.

A traced run's steps are numbered by the trace writer process, not in the program, so the
program cannot ask "is this step N?". It can recognise step N's call instead: ``StopPoint``
reads the recording up to step N and counts how many earlier ``call`` steps entered the same
function at the same line (``occurrence``); the replayed program is stopped at the call that is
one more than that. The tracer's ``_call`` (the call event of a traced function) is wrapped
for this replay only, so recording pays nothing for it.

At the stop: the stream is flushed and the writer asked for its next index (so every step
before the stop, and the stop's own call step, is in the scratch timeline), the comparison
catches up — a divergence before the stop ends the replay there, as without a stop — then the
tracer is removed and the frame handed to ``stops.interact``. After the user continues, the
program runs on to its end untraced (effects still served from the journal); the replay's
result is "replayed N + 1 steps". Only ``call`` steps are stop points: for another step the
refusal names the call step of the same frame.
"""

from __future__ import annotations

import os
import types
from typing import TYPE_CHECKING, Any

from . import stops

if TYPE_CHECKING:
    from ..store.reader import Step
    from .traced import TracedReplayRecorder

#: Modes that stop the traced replay at a call step (``live``, a fork, is not offered yet).
STOP_MODES = ("pdb", "console", "debugpy")


class StopPoint:
    """Where a traced replay stops: recorded call step ``index`` (see module docstring).

    ``function``, ``filename`` (base name), ``lineno``: what the tracer records for that call;
    ``occurrence``: how many earlier call steps match the same three. Raises ``ValueError``
    (with the message the replay fails with) when step ``index`` is no call step or does not
    exist.
    """

    def __init__(self, run: Any, index: int) -> None:
        steps = run.steps
        if not 0 <= index < len(steps):
            raise ValueError(f"the run has {len(steps)} steps; there is no step {index}")
        target = steps[index]
        if target.kind != "call":
            raise ValueError(_not_a_call(steps, index, target))
        self.index = index
        self.step = target
        self.function = target.function
        self.filename = os.path.basename(target.filename or "")
        self.lineno = target.lineno
        self.occurrence = 0
        for start in range(0, index, 4096):
            for step in steps.range(start, min(index, start + 4096)):
                if step.kind == "call" and self._matches(step.function, step.filename,
                                                          step.lineno):
                    self.occurrence += 1

    def _matches(self, function: str | None, filename: str | None, lineno: int | None) -> bool:
        return (function == self.function and lineno == self.lineno
                and os.path.basename(filename or "") == self.filename)

    def install(self, recorder: TracedReplayRecorder) -> None:
        """Wrap the recorder's tracer so that the stop's call hands its frame to ``_stop``."""
        tracer = recorder._tracer
        original = tracer._call
        fids = tracer._fids
        seen = 0
        point = self

        def watched(frame: types.FrameType, info: Any) -> Any:
            nonlocal seen
            opened = frame not in fids
            result = original(frame, info)
            if (opened and frame in fids and point._matches(info.function, info.filename,
                                                            frame.f_lineno)):
                seen += 1
                if seen > point.occurrence:
                    tracer._call = original  # one stop per replay
                    return point._stop(recorder, frame)
            return result

        tracer._call = watched

    def _stop(self, recorder: TracedReplayRecorder, frame: types.FrameType) -> Any:
        """Compare every step up to the stop, remove the tracer, interact; returns the
        frame's trace function from now on (the debugger's, or None)."""
        session = recorder.session
        recorder._stream.request_index()  # flushed, and the writer has taken it all
        recorder.catch_up_to(self.index)
        recorder._tracer.stop()
        mode = session.config.mode
        stops.interact(mode, frame, self.index, self.step, listen=session.config.listen,
                       then="lets the program run on to its end, untraced")
        return frame.f_trace


def _not_a_call(steps: Any, index: int, target: Step) -> str:
    """The refusal for a stop at a step that is no call: names the call of the same frame
    (the nearest call step before it at the same depth, in the same function)."""
    call = None
    for start in range(index, -1, -4096):
        chunk = steps.range(max(0, start - 4095), start + 1)
        for step in reversed(chunk):
            if (step.kind == "call" and step.depth == target.depth
                    and step.function == target.function):
                call = step
                break
        if call is not None:
            break
    where = f" (the call of {call.function}: --to {call.index})" if call is not None else ""
    return (f"step {index} is a {target.kind} step of a traced run; a traced replay stops at "
            f"call steps only{where}")
