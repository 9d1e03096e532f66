"""Stopping a traced replay at a step: pdb, a console or an IDE's debugger on the live frame,
or a fork that goes on live from there.

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
result is "replayed N + 1 steps". A checkpoint, effect or waiting step is a stop point too
(recognised as below; the frame is the one that made the step, ``step_values`` its values).
Line and return steps are not: the refusal names the call step of the same frame.

A fork (``--live``, and resuming a crashed run) stops at a call step the same way, and also at
a checkpoint or effect step — steps the recorder stores one by one, recognised when the replay
stores its own (kind, label, lineage and occurrence; ``TracedReplayRecorder.capture``). There
the replay goes live (``TracedReplayRecorder.go_live``) and the tracer stays: it goes on into
the fork. Line and return steps are no fork points (their frame's call step is named).

In a run of concurrent asyncio tasks, other tasks are inside effects at step N: their bodies,
which replay serves, count as made (``in_flight.py``). To have every task where it was at step
N when the replay gets there, the served effects return in the recorded order of the effects
and checkpoints before N, those recorded after N wait until it is reached
(``EffectTurns.hold``), and the effect a stop is at waits for the other tasks' earlier steps
(``others_caught_up``). A stop at a step of an effect's own body, in its own task, is refused
once the task calls that effect (``inside_effect``: the effect's step and a stop before it).
Should another task still run ahead of the stop — make a step recorded after N before the
replay reaches N, which the fork (the parent's steps up to N) would not hold — the fork is
refused, naming that step (``ran_ahead``). An ``async`` effect in flight when the run died
(the journal has nothing for it: it runs for real) waits for the fork when the recording made
its steps after N (``TracedReplayRecorder.await_live``), so it cannot run ahead of N. Steps a
task still makes ahead of N refuse the fork — but for a resume, which continues where the
program is rather than at a step the user chose: its fork point moves to the last of the steps
made ahead, once every recorded step up to it was made (``TracedComparison.take_ahead``).
"""

from __future__ import annotations

import os
import threading
import types
from typing import TYPE_CHECKING, Any

from ..capture import lineage
from . import stops

if TYPE_CHECKING:
    from ..store.reader import Step
    from .traced import TracedReplayRecorder

#: Modes that stop the traced replay at a step: a debugger or console on the live frame, or
#: a fork going on live from there (``live``; a resume of a crashed run is one too).
STOP_MODES = ("pdb", "console", "debugpy", "live")
#: Steps stored one by one in a traced run (through ``Recorder.capture``): fork points too
#: (a ``waiting`` step is where a resume goes live).
FULL_KINDS = ("checkpoint", "effect", "waiting")


class StopPoint:
    """Where a traced replay stops: recorded step ``index`` (see module docstring).

    ``function``, ``filename`` (base name), ``lineno``: what the tracer records for that call;
    ``occurrence``: how many earlier call steps match the same three. A checkpoint, effect or
    waiting step is a stop point too (``full``: a step stored one by one), recognised by its
    kind, label and lineage and how many earlier steps had the same. Raises ``ValueError`` (with the
    message the replay fails with) when step ``index`` is no stop point or does not exist.
    """

    def __init__(self, run: Any, index: int) -> None:
        steps = run.steps
        if not 0 <= index < len(steps):
            raise ValueError(f"the run has {len(steps)} steps; there is no step {index}")
        target = steps[index]
        self.full = target.kind in FULL_KINDS
        if target.kind != "call" and not self.full:
            raise ValueError(_not_a_call(steps, index, target))
        self.index = index
        self.step = target
        self.function = target.function
        self.filename = os.path.basename(target.filename or "")
        self.lineno = target.lineno
        self.key = (target.kind, target.label, target.lineage or "")
        #: A call stop is the call in the step's own lineage (threads call a function in
        #: any order): counted there when the run has lineages.
        self.lane = target.lineage or ""
        self.by_lineage = bool(run.entry.get("lineage"))
        self.occurrence = 0
        #: The checkpoint steps recorded before the stop, by lineage: the served effects
        #: recorded after one return after the replay made it (``TracedReplayRecorder``).
        self.checkpoints: dict[str, list[int]] = {}
        for start in range(0, index, 4096):
            for step in steps.summaries(start, min(index, start + 4096)):
                if step.kind == "checkpoint":
                    self.checkpoints.setdefault(step.lineage or "", []).append(step.index)
                if self.full:
                    self.occurrence += (step.kind, step.label, step.lineage or "") == self.key
                elif (step.kind == "call" and self._matches(step.function, step.filename,
                                                             step.lineno)
                      and (not self.by_lineage or (step.lineage or "") == self.lane)):
                    self.occurrence += 1
        self._seen = 0
        #: The replay made the stop's step (the stop happened, or the fork went live).
        self.reached = False

    def _matches(self, function: str | None, filename: str | None, lineno: int | None) -> bool:
        return (function == self.function and lineno == self.lineno
                and os.path.basename(filename or "") == self.filename)

    def reached_full(self, kind: str, label: str | None, lane: str) -> bool:
        """For a full stop point: True at the step the replay just stored when it is the
        stop's (``kind``, ``label``, the calling lineage ``lane``), counting occurrences."""
        if not self.full or (kind, label, lane) != self.key:
            return False
        self._seen += 1
        if self._seen == self.occurrence + 1:  # once: the later ones are other steps
            self.reached = True
            return True
        return False

    def install(self, recorder: TracedReplayRecorder) -> None:
        """Wrap the recorder's tracer so that the stop's call hands its frame to ``_stop``
        (a full stop point is recognised by ``TracedReplayRecorder.capture`` instead)."""
        if self.full:
            return
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
                                                            frame.f_lineno)
                    and (not point.by_lineage or recorder.lane() == point.lane)):
                seen += 1
                if seen > point.occurrence:
                    tracer._call = original  # one stop per replay
                    point.reached = True
                    other_threads_caught_up(recorder, point.index)
                    if recorder.session.config.mode == "live":
                        recorder.go_live(point.index, in_trace_event=True)  # traced on
                        recorder.stop_reached()
                        return result
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
        try:  # the effects held for the stop return once the user goes on
            quit_there = stops.interact(mode, frame, self.index, self.step,
                                        listen=session.config.listen,
                                        then="lets the program run on to its end, untraced",
                                        entry=session.run.entry)
        finally:
            recorder.stop_reached()
        if quit_there:
            from .report import steps

            session.succeed(f"replayed {steps(self.index + 1)} (0-{self.index}), "
                            "no divergence; pdb quit there")
        return frame.f_trace


async def others_caught_up(recorder: TracedReplayRecorder, index: int, lane: str) -> None:
    """At the effect step a stop is at (a served ``async`` call in lineage ``lane``, about to
    return): wait until the other tasks made every step recorded before it, at most
    ``TURN_WAIT`` seconds. They interleave with this one by the order their effects return
    (``effect_turns.py``), not step by step: a checkpoint another task made between two
    effects when recorded may still be ahead of it here. A step of ``lane`` itself, or one
    not made in time (another path: the stop's comparison reports it), ends the wait."""
    import asyncio

    from .serving import TURN_WAIT

    follower = recorder._follower
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TURN_WAIT
    while loop.time() < deadline:
        recorder._stream.request_index()  # every step made so far, written
        left = follower.unmet(index - 1)
        if left is None or (left.lineage or "") == lane:
            return
        await asyncio.sleep(0.002)


def other_threads_caught_up(recorder: TracedReplayRecorder, index: int, *,
                            serving: bool = False) -> None:
    """At a stop reached in this thread (a call, or a checkpoint or effect step just stored),
    or before a served call returns in a pool thread (``serving``): wait, at most
    ``TURN_WAIT`` seconds, until the lineages of other threads — pool calls, threads
    (``thread_of``) — made every step recorded before ``index``. Threads run at their own
    pace: a pool worker's stop came before another worker had made its earlier steps, and the
    stop's comparison reported them missing; a served call came back before the steps the
    program made while it was in flight, and ``concurrent.futures.as_completed`` took another
    answer first. With ``serving``, the bodies of the served calls in flight (never run) are
    not waited for. A step of a lineage of this thread (a task suspended here, which cannot go
    on while this thread waits), or one not made in time (another path: the comparison
    reports it), ends the wait. The first look takes the steps written so far; the next ones
    have every step made so far written first (a round trip to the writer)."""
    from ..clocks import Clocks
    from .serving import TURN_WAIT

    follower = recorder._follower
    mine = thread_of(recorder.lane())
    deadline = Clocks.monotonic() + TURN_WAIT
    pause = threading.Event()  # never set: a wait that no patch of ``time.sleep`` reaches
    written = False
    while not recorder.live and Clocks.monotonic() < deadline:
        with recorder._turn:
            held = set(recorder.waiting_for_live)  # calls in flight when the run died
        left = follower.waiting_on(index - 1, held,
                                   recorder._serving.steps() if serving else None)
        if left is None or thread_of(left.lineage or "") == mine:
            return
        if written:
            pause.wait(0.002)
        recorder._stream.request_index()  # every step made so far, written
        written = True


def thread_of(lane: str) -> str:
    """The part of lineage ``lane`` that names its thread: up to its last thread (``h``),
    pool call (``p``) or first-seen thread (``x``) segment, else its first segment (the
    asyncio tasks of ``main/t0/t2`` run in ``main``'s thread)."""
    parts = lane.split("/")
    for end in range(len(parts), 0, -1):
        head = parts[end - 1]
        if head[:1] in ("h", "p", "x") and head[1:].isdigit():
            return "/".join(parts[:end])
    return parts[0]


def resume_point(run: Any, last: int) -> int:
    """Where a crashed traced run is continued: its last checkpoint or effect step at or
    before ``last`` — stored at once by the recorder, so every effect that completed is at or
    before it and the one in flight after it (the traced steps after it are made again, live).
    Raises ``ValueError`` when the run has none."""
    for stop in range(last + 1, 0, -4096):
        for step in reversed(run.steps.summaries(max(0, stop - 4096), stop)):
            if step.kind in FULL_KINDS:
                return step.index
    raise ValueError("it ended before its first effect or checkpoint: nothing to continue "
                     "from (record it again)")


def inside_effect(run: Any, index: int, effect: int, name: str, mode: str) -> str:
    """The refusal for a stop (``mode``: "stop" or "fork") at step ``index``, a step of the
    body of effect ``name`` recorded at step ``effect``: names the effect's step and the
    nearest stop point before the effect's call in the same lineage, if any."""
    before = _stop_before_call(run.steps, index, effect)
    where = f" (--to {before})" if before is not None else ""
    return (f"step {index} is inside effect '{name}' (step {effect}): replay serves the "
            f"effect's recorded result without running its body, so it cannot {mode} there; "
            f"{mode} at the effect (--to {effect}) or at a step before its call{where}")


def ran_ahead(index: int, ahead: Step) -> str:
    """The refusal for a fork at step ``index`` the replay reached after it had made step
    ``ahead``, recorded after it, in another task: the fork, its parent's steps up to
    ``index``, would not hold it, though the program did it."""
    return (f"cannot fork at step {index}: the replay made step {ahead.index} ({ahead.kind} "
            f"in {ahead.function}, {ahead.lineage}), recorded after it, before reaching it "
            f"(its tasks ran in another order here), and the fork would not hold it; fork at "
            f"step {ahead.index} or later, or before step {index}")


def _stop_before_call(steps: Any, index: int, effect: int) -> int | None:
    """The last stop point (a call, checkpoint, effect or waiting step) before step ``index``
    that is not in the body of the effect recorded at step ``effect``: in the effect's
    lineage, one no deeper than the frame that called the effect; else (an asyncio task
    whose coroutine is the effect, ``asyncio.create_task(fetch(url))``; the Agents SDK runs
    each tool call in a task of a task of its own) one of the nearest lineage that spawned it,
    or spawned its spawner, that has one. None when there is none."""
    made = steps.summaries(effect, effect + 1)
    if not made or made[0].lineage is None:
        return None
    lane, depth = made[0].lineage, made[0].depth
    spawners = lineage.ancestors(lane)
    found: dict[str, int] = {}
    for stop in range(index, 0, -4096):
        for step in reversed(steps.summaries(max(0, stop - 4096), stop)):
            if step.kind != "call" and step.kind not in FULL_KINDS:
                continue
            if step.lineage == lane and step.depth <= depth:
                return step.index
            if step.lineage in spawners and step.lineage not in found:
                found[step.lineage] = step.index
    return next((found[name] for name in spawners if name in found), None)


def call_of_frame(steps: Any, index: int) -> Step | None:
    """The call step of the frame step ``index`` was recorded in — the nearest call step
    before it at the same depth, in the same function — where a traced replay can stop in
    pdb on that frame (``--to``); None when there is none."""
    target = steps[index]
    for start in range(index, -1, -4096):
        chunk = steps.range(max(0, start - 4095), start + 1)
        for step in reversed(chunk):
            if (step.kind == "call" and step.depth == target.depth
                    and step.function == target.function):
                return step
    return None


def _not_a_call(steps: Any, index: int, target: Step) -> str:
    """The refusal for a stop at a step that is no call: names the call of the same frame
    (``call_of_frame``)."""
    call = call_of_frame(steps, index)
    where = f" (the call of {call.function}: --to {call.index})" if call is not None else ""
    article = "an" if target.kind[:1] in "aeiou" else "a"
    return (f"step {index} is {article} {target.kind} step of a traced run; a traced replay "
            f"stops and forks at call, checkpoint and effect steps only{where}")
