"""Replaying a traced run (``trace="calls"``/``"lines"``, ``snapstate record``).

Traced steps do not pass through ``Recorder.capture``: the tracer hands compact items to a
writer process (``trace_stream``). So a traced run is replayed by recording it again — the
same tracer, the same options — into a scratch timeline, with effects served from the original
journal (never executed) and the random state restored. A follower thread compares the scratch
run with the recording as its chunks are written, step by step and per lineage
(``traced_compare.py``): the first difference ends the replay at once, without running the
rest of the program; the end of the block compares what is left. ``--to N`` checks the first
N + 1 steps; with ``--pdb``/``--console``/``--debugpy`` the replay stops at step N, a call
step (``traced_stop.py``) or a checkpoint, effect or waiting step (``_stop_at``).

``--live`` (and resuming a crashed run) forks at step N — a call, checkpoint or effect step:
once the replay reached it and every step up to it compared, ``go_live`` creates the fork in
the recording's file with the parent's steps ``0 … N`` (``fork.py``), and the trace writer
process goes on into it (``tracing/trace_fork.py``): the tracer keeps its frames and the
fork's steps are numbered on from N + 1. From then on effects run for real and are journaled
in the fork. A resume at a wait goes live the same way at the ``waiting`` step, once the
answer passed the program's schema (``take_resumption``, as ``ReplayRecorder``'s).
"""

from __future__ import annotations

import _thread
import collections
import dataclasses
import os
import sys
import threading
import types
from typing import TYPE_CHECKING, Any

from ..capture import lineage
from ..capture.recorder import Recorder
from ..own_threads import start_own_thread
from ..store.chunk_scan import has_chunked_values
from ..tracing.big_values import FIRST_PROBE_LIMIT
from ..trust.gate import open_timeline
from .effect_turns import EffectTurns
from .in_flight import InFlight
from .recorder import ReplayRecorder, restore_recorded_rng
from .report import print_exit_message, steps
from .traced_compare import TracedComparison

if TYPE_CHECKING:
    from ..options import CaptureOptions
    from .session import ReplaySession


#: Seconds between two looks of the comparison at the scratch timeline; steps per read.
FOLLOW_SECONDS = 0.25
_BATCH = 512


def _recorded_chunked(session: ReplaySession) -> bool:
    """Whether the recorded run stored its frames' big lists and dicts by chunks: it says so
    (``entry["chunked_locals"]``), or, recorded by the first versions that chunked them, which
    did not say so, a traced value of it is stored by chunks (``has_chunked_values``)."""
    run = session.run
    if "chunked_locals" in run.entry:
        return True
    return has_chunked_values(session.timeline, run.id)


class TracedReplayRecorder(Recorder):
    """Records the replayed traced run into ``session.scratch`` (see module docstring)."""

    _serve = ReplayRecorder._serve
    _recorded_site = ReplayRecorder._recorded_site
    _wait_for_live = ReplayRecorder._wait_for_live
    lane = ReplayRecorder.lane
    take_resumption = ReplayRecorder.take_resumption
    effect_turns = ReplayRecorder.effect_turns
    live = False

    def __init__(self, session: ReplaySession, *, root: types.FrameType | None, name: str,
                 options: CaptureOptions, trace: str, include: Any, exclude: Any) -> None:
        if options.chunked_locals and not _recorded_chunked(session):
            # recorded before big locals were chunked: store them whole, as the recording
            # did, so each step's values have the recording's keys (the fast comparison)
            options = dataclasses.replace(options, chunked_locals=False)
        if options.bound_by_value and "bounded" not in session.run.entry:
            # recorded before what dill writes by value counted: decide big values as it did
            options = dataclasses.replace(options, bound_by_value=False)
        options = dataclasses.replace(options, probe_limit=recorded_probe_limit(session.run.entry))
        super().__init__(session.scratch, name=name, options=options, root=root,
                         block=session.block, trace=trace, include=include, exclude=exclude,
                         entry=session.run.entry)
        self.session = session
        self._served_exceptions: set[int] = set()
        #: Served ``async`` effects return in the recorded order (``effect_turns``).
        self._effect_turns: EffectTurns | None = None
        #: Notified when the replay goes live (a call in flight waits for it: ``_serve``).
        self._turn = threading.Condition()
        self.waiting_for_live: dict[str, int] = {}  # ``EffectServing._wait_for_live``
        self._point: Any = None
        #: The effects held for the stop were let go (``stop_reached``): only once the stop's
        #: comparison is done, so that none returns between the stop's wait for the other
        #: threads and its comparison (``in_flight.py``) — and, at a debugger's stop, once the
        #: user goes on: meanwhile the other threads wait at their next effect recorded after
        #: the stop rather than running on past it.
        self._released = False
        #: The ``waiting`` step a resume stops at, once reached (``take_resumption``).
        self._resume_at: int | None = None
        #: The checkpoints before the stop not made yet, by lane (``StopPoint.checkpoints``).
        self._checkpoints: dict[str, collections.deque[int]] = {}
        #: Served calls not returned yet (``in_flight.py``), for a stop or fork.
        self._in_flight = InFlight()
        #: Every served call not returned yet (``traced_stop.other_threads_caught_up``).
        self._serving = InFlight()

    def serve_effect(self, call: Any) -> None:
        """Serve ``call`` from the journal (``ReplayRecorder.serve_effect``); end the replay
        when the stop, not reached yet, was recorded in the calling lineage before this
        effect's step: it is a step of the effect's own body, which replay never runs. A stop
        in another task or thread is still to come: this call is in flight meanwhile
        (``in_flight``), and its body's recorded steps count as served at the stop."""
        ReplayRecorder.serve_effect(self, call)
        step = getattr(call, "recorded_step", None)
        if self.live or not call.served or step is None:
            return
        self._serving.add(call)
        point = self._point
        if point is None or self._released:
            return
        self._in_flight.add(call)
        if step <= point.index or point.reached:
            return
        if self._follower.comparison.by_lineage and not _in_body(point.step.lineage,
                                                                  call.lineage):
            return  # the stop is in another lineage, which goes on
        self._stream.request_index()
        self._follower.catch_up()  # a divergence in the steps made so far is reported first
        from .traced_stop import inside_effect

        mode = "fork" if self.session.config.mode == "live" else "stop"
        self.session.fail(inside_effect(self.session.run, point.index, step, call.name, mode))

    def effect_returned(self, call: Any) -> None:
        """``call`` (served) returns now: no longer in flight; the served ``async`` effects
        recorded as returning after it may return (``ReplayRecorder.effect_returned``)."""
        ReplayRecorder.effect_returned(self, call)
        self._in_flight.returned(call)
        self._serving.returned(call)

    async def served_in_order(self, call: Any) -> None:
        """A served ``async`` effect, before it returns: in the recorded order
        (``ReplayRecorder.served_in_order``; live, among the calls in flight at the fork:
        ``EffectTurns.keep_only``); the effect step a stop is at also waits for the
        other tasks to make the steps recorded before it (``traced_stop.others_caught_up``)."""
        if call.served:  # (live, still one in flight at the fork: ``keep_only``)
            await self.effect_turns().served(call.recorded_step, call.passes,
                                             call.suspended)
        point = self._point
        if (point is not None and point.full and not point.reached and not self.live
                and call.recorded_step == point.index):
            from .traced_stop import others_caught_up

            await others_caught_up(self, point.index, call.lineage)

    await_turn_async = served_in_order  # traced runs compare per lineage

    def await_turn(self, call: Any) -> None:
        """A served call in a thread, before its step: while a stop is pending in another
        thread, one recorded after the stop waits (at most ``TURN_WAIT`` s) until the replay
        reached it. A pool worker went on to its next served effect before another worker
        reached the stop, and the fork was refused for the step made ahead (``ran_ahead``).
        Then, in a thread other than the main one (whose asyncio tasks would stop), it waits
        until the other threads made the steps recorded before it, as the recorded call came
        back among them (``traced_stop.other_threads_caught_up``). ``async`` calls keep only
        their order among themselves (``effect_turns.py``): asking the writer for the steps
        made so far from the event loop's thread held up every task (a live fork's copy of its
        parent's steps, ~1 s), and the fork recorded another order."""
        point, step = self._point, call.recorded_step
        if self.live or step is None:
            return
        if point is not None and not self._released and step > point.index:
            self._after_stop(call)
        if not self.live and call.served and \
                threading.current_thread() is not threading.main_thread():
            from .traced_stop import other_threads_caught_up

            other_threads_caught_up(self, step, serving=True)

    def _after_stop(self, call: Any) -> None:
        """``await_turn`` of a call recorded after a stop pending in another thread."""
        point = self._point
        from .serving import TURN_WAIT
        from .traced_stop import thread_of

        if thread_of(call.lineage) != thread_of(point.lane):
            with self._turn:
                self._turn.wait_for(lambda: self._released or self.live, TURN_WAIT)

    async def await_live(self, call: Any) -> None:
        """An ``async`` effect in flight when the run died, called in asyncio's thread before
        the fork point (a resume's, or ``--to N --live``) is reached: it runs for real, but
        only once the replay went live when the recording has none of the steps of its
        lineage — nor of the threads and tasks it started — up to the fork point. Else the
        body's steps, recorded after that point, would come before it here, which the fork
        (its parent's steps up to there) would not hold. Waits at most ``TURN_WAIT`` s; an
        effect whose body's steps the recording has before the fork point runs at once."""
        import asyncio

        from .serving import TURN_WAIT

        point = self._point
        if self.live or point is None or point.reached:
            return
        self._stream.request_index()  # every step made so far, written
        if self._follower.lane_left(call.lineage, point.index):
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TURN_WAIT
        while not self.live and loop.time() < deadline:
            await asyncio.sleep(0.002)

    def effect_step(self, entry: Any) -> int:
        """The step an effect divergence is reported at: the recorded call's step."""
        return entry.step if entry is not None and entry.step is not None else self.session.count

    def start(self) -> bool:
        from .traced_stop import STOP_MODES, StopPoint

        config = self.session.config
        point = None
        if config.mode in (*STOP_MODES, "resume") and config.to is not None:
            try:  # read before the program starts: a step that is no stop point fails now
                point = StopPoint(self.session.run, config.to)
            except ValueError as exc:
                self.session.fail(str(exc))
        self._point = point
        if point is not None:  # the served effects return in the recorded order of the
            turns = self.effect_turns()  # steps up to the stop (``effect_turns.py``)
            turns.hold(point.index)
            turns.also_order(i for indexes in point.checkpoints.values() for i in indexes)
            self._checkpoints = {lane: collections.deque(indexes)
                                 for lane, indexes in point.checkpoints.items()}
        restore_recorded_rng(self.session)
        if not super().start():
            self.session.fail("cannot record the traced replay into a scratch timeline")
        self._follower = _Follower(self, stops=point is not None)
        self._follower.comparison.in_flight = self._in_flight.steps
        self._follower.start()
        if point is not None:
            point.install(self)
        return True

    def stop_reached(self) -> None:
        """The replay made the stop's step and compared every step up to it: the effects
        held back for it return in their turn (``EffectTurns.hold``, ``await_turn``)."""
        self._released = True
        self.effect_turns().unhold()
        with self._turn:
            self._turn.notify_all()

    def catch_up_to(self, index: int) -> None:
        """Compare every scratch step written so far (in the calling thread) and check that
        the recording's steps up to ``index`` were all met; else the replay diverges there."""
        self._follower.catch_up()
        self._follower.comparison.check_reached(index)

    def capture(self, kind: str, frame: types.FrameType | None, *, label: str | None = None,
                extra: dict[str, Any] | None = None, lineno: int | None = None,
                effect: dict[str, Any] | None = None) -> int | None:
        """Store a checkpoint or effect step (into the scratch run, or live into the fork);
        at a fork point that is such a step, go live once it is stored."""
        if self.live and kind == "effect" and self._in_flight.in_prefix(effect):
            return None  # in flight at the fork, and among its copied steps already
        index = super().capture(kind, frame, label=label, extra=extra, lineno=lineno,
                                effect=effect)
        if kind == "checkpoint" and not self.live:
            made = self._checkpoints.get(self.lane())
            if made:  # the recorded checkpoint this one is: the effects after it may return
                self.effect_turns().returned(made.popleft())
        point = self._point
        if (point is not None and not self.live and point.full
                and point.reached_full(kind, label, self.lane())):
            from .traced_stop import other_threads_caught_up

            other_threads_caught_up(self, point.index)
            if self.session.config.mode == "resume":
                self.stop_reached()  # compared when the wait takes its outcome (go_live)
                if kind != "waiting":
                    self.session.fail(f"step {point.index} is a {kind} step, not the wait "
                                      "the run stopped at")
                self._resume_at = point.index  # the wait takes its outcome: go_live there
                return index
            if self.session.config.mode == "live":
                self.go_live(point.index)
                self.stop_reached()
            elif frame is not None:
                self._stop_at(point, frame, extra)
            else:
                self.stop_reached()
        return index

    def _stop_at(self, point: Any, frame: types.FrameType,
                 extra: dict[str, Any] | None) -> None:
        """pdb, a console or an IDE's debugger at a checkpoint, effect or waiting step (just
        stored): every step up to it compared, then the tracer removed and the step's innermost
        shown frame (never SnapState's own: the untraced replay stops there too) handed over,
        the step's live values as ``step_values``; the program then runs on to its end
        untraced."""
        from . import stops

        tracer = self._tracer
        if tracer is not None:
            tracer.pause()  # not resumed: removed below, after the comparison
        self._stream.request_index()
        self.catch_up_to(point.index)
        if tracer is not None:
            tracer.stop()
        shown = self._frames.walk(frame, self.root)  # the step's innermost frame, as recorded
        config = self.session.config
        try:  # the effects held for the stop return once the user goes on (``_released``)
            quit_there = stops.interact(
                config.mode, shown[-1] if shown else frame, point.index, point.step, extra,
                listen=config.listen, then="lets the program run on to its end, untraced",
                entry=self.session.run.entry)
        finally:
            self.stop_reached()
        if quit_there:
            self.session.succeed(f"replayed {steps(point.index + 1)} (0-{point.index}), "
                                 "no divergence; pdb quit there")

    def go_live(self, index: int, *, in_trace_event: bool = False) -> None:
        """At fork point ``index`` (the program just made it): compare every step up to it,
        create the fork with the parent's steps ``0 … index`` and move the trace writer onto
        it (see the module docstring). Failing ends the replay with the reason.
        ``in_trace_event``: called by the tracer (a call step), which traces nothing
        meanwhile; otherwise this thread's tracing is paused while the fork is made."""
        tracer = self._tracer
        saved = tracer.pause() if tracer is not None and not in_trace_event else None
        try:
            self._go_live(index)
        finally:
            if tracer is not None and not in_trace_event:
                tracer.resume(saved)

    def _go_live(self, index: int) -> None:
        from .fork import open_fork

        session = self.session
        self._stream.request_index()  # flushed, and the writer has taken it all
        self.catch_up_to(index)
        follower = self._follower
        matched = follower.comparison.matched_at
        if matched is None:
            session.fail(f"the replay reached step {index} without comparing it; cannot fork")
        ahead = follower.comparison.ahead
        if ahead is not None:  # a resume forks after the steps made ahead; else refused
            taken = follower.comparison.take_ahead() if session.config.lease else None
            if taken is None:
                from .traced_stop import ran_ahead

                session.fail(ran_ahead(index, ahead))
                return
            index, matched = taken
        self._in_flight.settle(index)  # their steps are among the fork's copied ones
        opened = open_fork(session, index, self._user_key())
        if opened is None:
            return
        writer, fork_id = opened
        writer.close()  # the trace writer process records the fork from here
        try:
            self._stream.fork(session.config.file, fork_id, matched + 1)
        except Exception as exc:  # noqa: BLE001 - reported as the replay's error
            session.fail(f"cannot start the fork: {type(exc).__name__}: {exc}")
            return
        follower.stop()
        self.run_id = fork_id
        self.parent = (session.run.id, index)
        self.path = session.config.file
        session.fork = {"run": fork_id, "parent": session.run.id, "step": index}
        if self._effect_turns is not None:  # live: effects return when they return, but
            self._effect_turns.keep_only(  # for the served ones in flight, in their order
                step for steps in self._in_flight.steps().values() for step in steps)
        with self._turn:
            self.live = True
            self._turn.notify_all()

    def finish(self, exc: BaseException | None) -> None:
        """End the scratch run, compare what the follower has not compared yet, and end the
        replay with the outcome; live, end the fork run (the child reports it)."""
        follower = getattr(self, "_follower", None)
        if follower is not None:
            follower.stop()
        super().finish(exc)
        if self.live:
            return
        print_exit_message(exc)
        if follower is None:
            self.session.fail("the traced replay never started")
        config = self.session.config
        if config.mode in ("live", "resume") and config.to is not None:
            follower.catch_up()
            follower.comparison.check_reached(None)
            self.session.fail(f"the program ended without reaching step {config.to} (the "
                              "fork point): nothing was forked")
        follower.catch_up()
        follower.comparison.end(self.session.config.to)

    @property
    def replayed(self) -> int:
        """Recorded steps compared so far (the result's ``replayed``)."""
        follower = getattr(self, "_follower", None)
        return follower.comparison.replayed if follower is not None else 0




class _Follower:
    """Compares the scratch run with the recording while the program runs, every
    ``FOLLOW_SECONDS``: the first divergence ends the replay at once (``session.diverge``
    ends the process), and with ``--to N`` the replay ends once step N is compared.

    Its thread is a bare ``_thread`` thread, as the flusher's (``tracing/flusher.py``): the
    replayed program never sees it in ``threading``'s registries, which the recording never
    had it in (``--include '*'`` traced ``Thread.start``'s bookkeeping and diverged there)."""

    def __init__(self, recorder: TracedReplayRecorder, *, stops: bool = False) -> None:
        self._ident: int | None = None
        self._done = threading.Event()
        #: a stop point ends the comparison at ``--to`` in the program's thread, not here
        self.stops = stops
        session = recorder.session
        self.session = session
        self.run_id = recorder.run_id
        self.recorded = open_timeline(session.config.file, trust=session.config.trust)
        self.comparison = TracedComparison(
            session, self.recorded.run(session.run.id),
            session.run.entry.get("cwd") or os.getcwd(),
            session.count if session.config.to is None else session.config.to + 1)
        self.fed = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._scratch: Any = None

    def start(self) -> None:
        """Start comparing in the follower's own thread."""
        self._ident = start_own_thread(lambda: _thread.start_new_thread(self._main, ()))

    def _main(self) -> None:
        try:
            self.run()
        finally:
            self._done.set()

    def run(self) -> None:
        sys.settrace(None)  # snapstate's own thread: not traced, not a lineage
        while not self._stopping.wait(FOLLOW_SECONDS):
            try:
                self.catch_up()
            except Exception:  # noqa: BLE001 - a half-written file: the end compares it all
                pass
            config = self.session.config
            if (config.to is not None and not self.stops
                    and self.comparison.first_left() is None):
                self.session.succeed(f"replayed {steps(config.to + 1)} (0-{config.to}), "
                                     "no divergence")

    def catch_up(self) -> None:
        """Compare the scratch steps written since the last call."""
        with self._lock:
            if self._scratch is None:
                self._scratch = open_timeline(self.session.scratch,
                                              trust=self.session.config.trust)
            steps = self._scratch.run(self.run_id).steps
            total = len(steps)
            while self.fed < total:
                batch = steps.range(self.fed, min(total, self.fed + _BATCH))
                if not batch:
                    break
                for actual in batch:  # counted one by one: a step that fails to read is
                    self.comparison.feed(actual)  # fed again, never the ones before it
                    self.fed += 1

    def unmet(self, index: int) -> Any:
        """The first recorded step at most ``index`` the scratch steps written so far do not
        meet (``TracedComparison.first_unmet``), or None; never diverges."""
        self.catch_up()
        with self._lock:
            return self.comparison.first_unmet(index)

    def waiting_on(self, index: int, held: set[str],
                   serving: dict[str, list[int]] | None = None) -> Any:
        """The first recorded step at most ``index`` the replay is still to make
        (``TracedComparison.waiting_on``), or None; takes nothing as met."""
        self.catch_up()
        with self._lock:
            return self.comparison.waiting_on(index, held, serving)

    def lane_left(self, lane: str, index: int) -> bool:
        """True when a recorded step at most ``index`` of lineage ``lane``, or of one it
        started, was not met by the scratch steps written so far
        (``TracedComparison.lane_left``)."""
        self.catch_up()
        with self._lock:
            return self.comparison.lane_left(lane, index)

    def stop(self) -> None:
        self._stopping.set()
        if self._ident is not None and self._ident != _thread.get_ident():
            self._done.wait()


def _in_body(stop: str | None, effect: str) -> bool:
    """Whether a stop recorded in lineage ``stop`` before an effect step recorded in lineage
    ``effect`` — the effect being served now, in this replay — is a step of the effect's
    body: made in the effect's own lineage, or in one the effect's lineage has not spawned
    yet here (a thread-pool call the body submitted: the OpenAI Agents SDK's and
    pydantic-ai's sync tools run in one). ``effect`` is the lineage the call is made in,
    where its step was recorded (``EffectCall.lineage``), not its journal key."""
    if not stop or not effect:
        return False
    if stop == effect:
        return True
    return stop.startswith(effect + "/") and not lineage.spawned(stop, effect)


def recorded_probe_limit(entry: dict[str, Any]) -> int:
    """The probe limit a traced run was recorded with (``CaptureOptions.probe_limit``): its
    ``entry["probe_limit"]``, or ``FIRST_PROBE_LIMIT`` for a run recorded before the limit was
    stored — a replay bounds the values its recording bounded, so their previews compare."""
    limit = entry.get("probe_limit")
    return limit if type(limit) is int and limit > 0 else FIRST_PROBE_LIMIT
