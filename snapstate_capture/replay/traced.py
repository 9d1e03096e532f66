"""Replaying a traced run (``trace="calls"``/``"lines"``, ``snapstate record``).

Traced steps do not pass through ``Recorder.capture``: the tracer hands compact items to a
writer process (``trace_stream``). So a traced run is replayed by recording it again — the
same tracer, the same options — into a scratch timeline, with effects served from the original
journal (never executed) and the random state restored. A follower thread compares the scratch
run with the recording as its chunks are written, step by step and per lineage
(``traced_compare.py``): the first difference ends the replay at once, without running the
rest of the program; the end of the block compares what is left. Stop points (pdb, console,
live) at a traced step are not offered yet: ``--to N`` checks the first N + 1 steps.
"""

from __future__ import annotations

import os
import sys
import threading
import types
from typing import TYPE_CHECKING, Any

from ..capture.recorder import Recorder
from ..trust.gate import open_timeline
from .recorder import ReplayRecorder, restore_recorded_rng
from .traced_compare import TracedComparison

if TYPE_CHECKING:
    from ..options import CaptureOptions
    from .session import ReplaySession


#: Seconds between two looks of the comparison at the scratch timeline; steps per read.
FOLLOW_SECONDS = 0.25
_BATCH = 512


class TracedReplayRecorder(Recorder):
    """Records the replayed traced run into ``session.scratch`` (see module docstring)."""

    serve_effect = ReplayRecorder.serve_effect
    _serve = ReplayRecorder._serve
    _recorded_site = ReplayRecorder._recorded_site
    _wait_for_live = ReplayRecorder._wait_for_live
    lane = ReplayRecorder.lane
    live = False

    def __init__(self, session: ReplaySession, *, root: types.FrameType | None, name: str,
                 options: CaptureOptions, trace: str, include: Any, exclude: Any) -> None:
        super().__init__(session.scratch, name=name, options=options, root=root,
                         block=session.block, trace=trace, include=include, exclude=exclude,
                         entry=session.run.entry)
        self.session = session
        self._served_exceptions: set[int] = set()

    def effect_step(self, entry: Any) -> int:
        """The step an effect divergence is reported at: the recorded call's step."""
        return entry.step if entry is not None and entry.step is not None else self.session.count

    def start(self) -> bool:
        from .traced_stop import STOP_MODES, StopPoint

        config = self.session.config
        point = None
        if config.mode in STOP_MODES and config.to is not None:
            try:  # read before the program starts: a step that is no stop point fails now
                point = StopPoint(self.session.run, config.to)
            except ValueError as exc:
                self.session.fail(str(exc))
        restore_recorded_rng(self.session)
        if not super().start():
            self.session.fail("cannot record the traced replay into a scratch timeline")
        self._follower = _Follower(self, stops=point is not None)
        self._follower.start()
        if point is not None:
            point.install(self)
        return True

    def catch_up_to(self, index: int) -> None:
        """Compare every scratch step written so far (in the calling thread) and check that
        the recording's steps up to ``index`` were all met; else the replay diverges there."""
        self._follower.catch_up()
        self._follower.comparison.check_reached(index)

    def finish(self, exc: BaseException | None) -> None:
        """End the scratch run, compare what the follower has not compared yet, and end the
        replay with the outcome."""
        follower = getattr(self, "_follower", None)
        if follower is not None:
            follower.stop()
        super().finish(exc)
        if follower is None:
            self.session.fail("the traced replay never started")
        follower.catch_up()
        follower.comparison.end(self.session.config.to)

    @property
    def replayed(self) -> int:
        """Recorded steps compared so far (the result's ``replayed``)."""
        follower = getattr(self, "_follower", None)
        return follower.comparison.replayed if follower is not None else 0




class _Follower(threading.Thread):
    """Compares the scratch run with the recording while the program runs, every
    ``FOLLOW_SECONDS``: the first divergence ends the replay at once (``session.diverge``
    ends the process), and with ``--to N`` the replay ends once step N is compared."""

    def __init__(self, recorder: TracedReplayRecorder, *, stops: bool = False) -> None:
        super().__init__(name="snapstate-replay-compare", daemon=True)
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
                self.session.succeed(f"replayed {config.to + 1} steps (0-{config.to}), "
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
                for actual in batch:
                    self.comparison.feed(actual)
                self.fed += len(batch)

    def stop(self) -> None:
        self._stopping.set()
        if self.is_alive() and self is not threading.current_thread():
            self.join()
