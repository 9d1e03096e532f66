"""The replaying recorder: compares each step with the recording instead of writing it.

``ReplayRecorder`` stands in for the ``Recorder`` of the replayed ``record`` block. Every
capture point the program reaches builds the same step record a recording would, and the
session's comparer checks it against the recorded step it corresponds to: the calling
lineage's next one (``order.py``), so threads and tasks may interleave differently. Effects
are served from the journal (``serving.py``). At the stop step it hands the live frame to pdb
or a console, or turns into an ordinary recorder writing a fork (``go_live``).
"""

from __future__ import annotations

import os
import threading
import types
from typing import TYPE_CHECKING, Any

from ..errors import SnapStateError, TimelineError
from ..capture import lineage
from ..capture.recorder import Recorder, _recording
from ..capture.tasks import current_task_name, current_thread_name
from ..capture.rng import restore_states
from ..store.reader import Step
from .fork import open_fork
from .effect_turns import EffectTurns
from .serving import EffectServing
from .fastpath import FastMatcher
from .order import StepOrder
from .report import divergence, print_exit_message, step_facts, steps

if TYPE_CHECKING:
    from ..options import CaptureOptions
    from .session import ReplaySession

_CHUNK = 256
#: Steps the fast path is skipped for after it failed on a step.
FAST_RETRY = 64


class ReplayRecorder(EffectServing, Recorder):
    """Replays one recorded run inside the re-executed program (see module docstring)."""

    def __init__(self, session: ReplaySession, *, root: types.FrameType | None, name: str,
                 options: CaptureOptions) -> None:
        super().__init__(session.config.file, name=name, options=options, root=root,
                         block=session.block)
        self.session = session
        self.replayed = 0
        self.live = False
        self._served_exceptions: set[int] = set()
        self._chunk: list[Step] = []
        self._chunk_start = 0
        self._fast_skip = 0
        #: The ``waiting`` step a resume stops at, once reached (mode ``resume``).
        self._resume_at: int | None = None
        self._fast = FastMatcher(session.timeline, options.values,
                                 session.run.entry.get("cwd") or os.getcwd(), session.relocation)
        self._turn = threading.Condition()
        self.waiting_for_live: dict[str, int] = {}  # ``EffectServing._wait_for_live``
        self._read_lock = threading.Lock()
        self._order = recorded_order(session)
        #: Served ``async`` effects return in the recorded order (``effect_turns``).
        self._effect_turns: EffectTurns | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> bool:
        """Count lineages afresh and restore the recorded generator states."""
        lineage.begin_run(_recording)
        restore_recorded_rng(self.session)
        return True

    def lane(self) -> str:
        return replay_lane(self.session)

    def effect_step(self, entry: Any) -> int:
        """The step an effect divergence is reported at: the recorded call's step, else the
        next step of the calling lineage."""
        if entry is not None and entry.step is not None:
            return int(entry.step)
        nxt = self._order.peek(self.lane())
        return nxt if nxt is not None else self._order.low

    def finish(self, exc: BaseException | None) -> None:
        """Live: end the fork run. Replaying: check the run ended where and how it did."""
        if self.live:
            super().finish(exc)
            return
        print_exit_message(exc)
        session = self.session
        if self._order.low < session.count:
            nxt = self._recorded(self._order.low)
            session.diverge(divergence(
                self._order.low, "ended-early",
                f"the program's run ended after {self.replayed} steps; the recording has "
                f"{session.count} (next: a {nxt.kind} step in {nxt.function} line {nxt.lineno})",
                expected=step_facts(nxt.kind, nxt.label, nxt.function, nxt.filename,
                                    nxt.lineno)))
        error = session.run.error or {}
        recorded_type = str(error.get("type", "")) if session.run.status == "failed" else ""
        actual_type = "" if exc is None or (isinstance(exc, SystemExit) and exc.code in (0, None)
                                            ) else _type_name(exc)
        if session.recording_complete and not _same_type(recorded_type, actual_type):
            session.diverge(divergence(
                self.replayed, "outcome",
                f"the run ended {'with ' + actual_type if actual_type else 'cleanly'}; the "
                f"recording ended {'with ' + recorded_type if recorded_type else 'cleanly'}"))
        session.succeed(f"replayed {steps(self.replayed)}, no divergence")

    # -- steps -----------------------------------------------------------------------------
    def capture(self, kind: str, frame: types.FrameType | None, *, label: str | None = None,
                extra: dict[str, Any] | None = None, lineno: int | None = None,
                effect: dict[str, Any] | None = None) -> int | None:
        if self.live:
            return super().capture(kind, frame, label=label, extra=extra, lineno=lineno,
                                   effect=effect)
        if getattr(self._reentry, "busy", False):
            return None
        self._last_raise_point = None  # a step is taken, as in Recorder.capture
        self._reentry.busy = True
        try:
            return self._replay_step(kind, frame, label, extra, lineno)
        except SnapStateError as exc:
            self.session.fail(f"replay stopped at step {self.replayed}: {exc}")
            return None
        except Exception as exc:  # noqa: BLE001 - never into the program: the replay ends
            self.session.fail(f"replay stopped at step {self.replayed} by an internal error: "
                              f"{type(exc).__name__}: {exc}")
            return None
        finally:
            self._reentry.busy = False

    def _replay_step(self, kind: str, frame: types.FrameType | None, label: str | None,
                     extra: dict[str, Any] | None, lineno: int | None) -> int | None:
        """Compare the step with the calling lineage's next recorded step (``order.py``)."""
        session = self.session
        frames = self._frames.walk(frame, self.root)
        lane = self.lane()
        index = self._order.take(lane)
        served = (kind == "exception" and bool(extra)
                  and id((extra or {}).get("exception")) in self._served_exceptions)
        if index is None:
            self._past_end(lane, self.build_record(kind, frame, label, extra, lineno,
                                                   frames=frames))
            return None
        recorded = self._recorded(index)
        if served or not self._fast_match(recorded, kind, label, frames, extra, lineno):
            record = self.build_record(kind, frame, label, extra, lineno, frames=frames)
            report = session.comparer.compare(recorded, record, frames, extra,
                                              served_exception=served)
            if report is not None:
                session.diverge(report)
        self._order.done(index)
        with self._turn:
            self.replayed = self._order.replayed
            self._turn.notify_all()
        session.progress(self.replayed - 1)  # the index of the last step replayed, as before
        to = session.config.to
        if to is not None:
            if session.config.mode == "check":
                if self._order.low > to:  # every step up to ``to``, in every lineage
                    self._stop_at(to, None, kind)
            elif index == to:
                self._stop_at(index, frames[-1] if frames else frame, kind, extra)
        return index

    def _fast_match(self, recorded: Step, kind: str, label: str | None,
                    frames: list[types.FrameType], extra: dict[str, Any] | None,
                    lineno: int | None) -> bool:
        """The fast path (``fastpath.py``), skipped after it failed on a matching step (a
        program whose big containers are stored as chunks) and retried every
        ``FAST_RETRY`` steps."""
        if self._fast_skip > 0:
            self._fast_skip -= 1
            return False
        if self._fast.matches(recorded, kind, label, frames, extra, lineno):
            return True
        self._fast_skip = FAST_RETRY
        return False

    def _recorded(self, index: int) -> Step:
        with self._read_lock:
            offset = index - self._chunk_start
            if not 0 <= offset < len(self._chunk):
                self._chunk = self.session.run.steps.range(index, index + _CHUNK)
                self._chunk_start, offset = index, 0
            return self._chunk[offset]

    def _past_end(self, lane: str, record: Any) -> None:
        """The calling lineage made a step more than it recorded: a divergence (or the end of
        an unfinished recording)."""
        session, order = self.session, self._order
        if not session.recording_complete:
            session.succeed(f"replayed {steps(self.replayed)}, no divergence; the recording ends "
                            f"here (run {session.run.status})")
        last = order.last_of(lane)
        actual = step_facts(record.kind, record.label, record.function, record.filename,
                            record.lineno)
        if not order.by_lineage or last is None and order.count == 0:
            session.diverge(divergence(
                session.count, "extra-step", f"the program reached step {session.count}; the "
                f"recording ended after {session.count} steps", actual=actual))
        if last is None:
            session.diverge(divergence(
                order.low, "extra-step", f"the program made a step in {lane}, which recorded "
                f"none", actual=actual))
        session.diverge(divergence(
            last + 1, "extra-step", f"{lane} made a step more than its {order.lane_count(lane)} "
            f"recorded ones (its last was step {last})", actual=actual))

    def _stop_at(self, index: int, frame: types.FrameType | None, kind: str,
                 extra: dict[str, Any] | None = None) -> None:
        from . import stops

        mode = self.session.config.mode
        if mode == "resume":
            if kind != "waiting":
                self.session.fail(f"step {index} is a {kind} step, not the wait the run "
                                  "stopped at")
            self._resume_at = index  # the wait itself takes its outcome (take_resumption)
        elif mode == "check":
            self.session.succeed(f"replayed {steps(index + 1)} (0-{index}), no divergence")
        elif mode == "live":
            self.go_live(index)
        elif frame is not None:
            if stops.interact(mode, frame, index, self._recorded(index), extra,
                              listen=self.session.config.listen, entry=self.session.run.entry):
                self.session.succeed(f"replayed {steps(index + 1)} (0-{index}), no divergence;"
                                     " pdb quit there")

    def go_live(self, index: int) -> None:
        """From here on, record for real into a new fork run branching at step ``index``.

        With a lease (a resume), the fork is the run's continuation: it is created only while
        the lease is still this process's, and claims it in the same transaction."""
        session = self.session
        opened = open_fork(session, index, self._user_key())
        if opened is None:
            return
        writer, fork_id = opened
        self._writer = writer
        # the replay's captures were compared, never written: refs cached from them may name
        # blobs the file does not have (a value whose preview differs on replay, an argparse
        # parser's), so the first live step captures everything afresh
        self._frames.forget()
        self.run_id = fork_id
        self.parent = (session.run.id, index)
        session.fork = {"run": fork_id, "parent": session.run.id, "step": index}
        if self._effect_turns is not None:
            self._effect_turns.open()  # live: effects return when they return
        turn = getattr(self, "_turn", None)
        if turn is None:
            self.live = True
            return
        with turn:
            self.live = True
            turn.notify_all()

    # -- durable waits ----------------------------------------------------------------------
    def take_resumption(self, name: str, pause: dict[str, Any], schema: Any) -> Any:
        """At the ``waiting`` step a resume stopped at: check the answer against the program's
        own ``schema`` (a pydantic model validates here; a bad answer ends the resume with the
        reason, nothing recorded), go live as the continuation, and return the
        ``Resumption`` for the wait. None anywhere else."""
        at, self._resume_at = self._resume_at, None
        if at is None or self.live:
            return None
        from ..capture.waits import Resumption, validate_in_program

        session = self.session
        recorded = (session.run.pause or {}).get("pause")
        if recorded and recorded != pause.get("pause"):
            session.fail(f"the run paused at a {recorded} and the program reached a "
                         f"{pause.get('pause')} at step {at}")
        given = session.resumption()
        value = given.value
        if pause.get("pause") == "wait":
            value, problem = validate_in_program(schema, value)
            if problem is not None:
                session.refuse(f"answer refused by {name!r}'s schema: {problem}")
        self.go_live(at)
        return Resumption(value, given.by)

    def patch_marker(self, patch_id: str, frame: types.FrameType) -> bool:
        """``patched(patch_id)`` while replaying: True only when the recording made the same
        decision here (its journal's next row for this task is the marker), else False."""
        if self.live:
            return super().patch_marker(patch_id, frame)
        task = self.lane()
        journal = self.session.journal
        entry = journal.peek_for(task)
        if entry is None or entry.name != f"patched:{patch_id}":
            return False
        journal.next_for(task)
        from ..capture.tasks import call_site

        site = call_site(frame)
        with self.effect_lock:
            self.effect_seq += 1
            self.effect_counts[(site, task)] = self.effect_counts.get((site, task), 0) + 1
        return True


def recorded_order(session: ReplaySession) -> StepOrder:
    """The per-lineage order of the recorded run's steps (``order.py``)."""
    by_lineage = bool(session.run.entry.get("lineage"))
    lineages = ([summary.lineage for summary in session.run.steps.summaries(0, session.count)]
                if by_lineage else [None] * session.count)
    return StepOrder(lineages, by_lineage=by_lineage)


def replay_lane(session: ReplaySession) -> str:
    """The lane the calling code's steps and effects are matched in: its lineage, or — for a
    run recorded before lineages — its asyncio task's or thread's name, as keyed then."""
    if session.run.entry.get("lineage"):
        return lineage.current()
    return current_task_name() or current_thread_name()


def restore_recorded_rng(session: ReplaySession) -> None:
    """Put the random generators where they were when the recorded run started."""
    try:
        keys = session.run.entry.get("rng") or {}
        restore_states({name: session.timeline.blob(key) for name, key in keys.items()})
    except TimelineError as exc:  # a missing or corrupt blob: the file is damaged
        session.fail(f"damaged timeline: the recorded random state cannot be read "
                     f"({exc.problem}); `snapstate verify` lists what is damaged")
    except (SnapStateError, ValueError, KeyError, TypeError) as exc:
        session.fail(f"cannot restore the recorded random state: {exc}")


def _type_name(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def _same_type(recorded: str, actual: str) -> bool:
    if not recorded or not actual:
        return recorded == actual
    return recorded == actual or recorded.rsplit(".", 1)[-1] == actual.rsplit(".", 1)[-1]
