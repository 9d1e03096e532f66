"""Replaying a traced run (``trace="calls"``/``"lines"``, ``snapstate record``).

Traced steps do not pass through ``Recorder.capture``: the tracer hands compact items to a
writer process (``trace_stream``). So a traced run is replayed by recording it again — the
same tracer, the same options — into a scratch timeline, with effects served from the original
journal (never executed) and the random state restored; when the replayed block ends, the two
runs are compared step by step (``compare.compare_steps``) and the first difference is the
divergence. Effect divergences still stop the replay at once. Stop points (pdb, console, live)
at a traced step are not offered yet: ``--to N`` only checks the first N + 1 steps.
"""

from __future__ import annotations

import os
import types
from typing import TYPE_CHECKING, Any

from ..capture.recorder import Recorder
from ..trust.gate import open_timeline
from .compare import compare_steps
from .recorder import ReplayRecorder, restore_recorded_rng
from .report import divergence

if TYPE_CHECKING:
    from ..options import CaptureOptions
    from .session import ReplaySession


class TracedReplayRecorder(Recorder):
    """Records the replayed traced run into ``session.scratch`` (see module docstring)."""

    serve_effect = ReplayRecorder.serve_effect
    _serve = ReplayRecorder._serve
    _recorded_site = ReplayRecorder._recorded_site
    _wait_for_live = ReplayRecorder._wait_for_live
    live = False

    def __init__(self, session: ReplaySession, *, root: types.FrameType | None, name: str,
                 options: CaptureOptions, trace: str, include: Any, exclude: Any) -> None:
        super().__init__(session.scratch, name=name, options=options, root=root,
                         block=session.block, trace=trace, include=include, exclude=exclude,
                         entry=session.run.entry)
        self.session = session
        self.replayed = 0
        self._served_exceptions: set[int] = set()

    def effect_step(self, entry: Any) -> int:
        """The step an effect divergence is reported at: the recorded call's step."""
        return entry.step if entry is not None and entry.step is not None else self.session.count

    def start(self) -> bool:
        restore_recorded_rng(self.session)
        if not super().start():
            self.session.fail("cannot record the traced replay into a scratch timeline")
        return True

    def finish(self, exc: BaseException | None) -> None:
        """End the scratch run, then compare it with the recording."""
        super().finish(exc)
        session = self.session
        cwd = session.run.entry.get("cwd") or os.getcwd()
        with open_timeline(session.scratch, trust=session.config.trust) as scratch:
            replayed = scratch.runs[-1]
            limit = session.count if session.config.to is None else session.config.to + 1
            recorded = (step for step in session.run.steps if step.kind != "gap")
            expected = next(recorded, None)
            for actual in replayed.steps:
                if actual.kind == "gap":
                    continue  # tracer bookkeeping, not program state
                if actual.kind == "effect":
                    # the recording also traced the effect's own body, which replay never runs
                    while (expected is not None and expected.kind != "effect"
                           and expected.depth > actual.depth):
                        expected = next(recorded, None)
                if expected is None or expected.index >= limit:
                    if expected is None and session.recording_complete:
                        session.diverge(divergence(
                            session.count, "extra-step", f"the program went on after the "
                            f"recording's last step ({actual.kind} in {actual.function} line "
                            f"{actual.lineno})"))
                    break
                report = compare_steps(expected, actual, cwd)
                if report is not None:
                    session.diverge(report)
                self.replayed = expected.index + 1
                session.progress(expected.index)
                expected = next(recorded, None)
        if session.config.to is not None:
            session.succeed(f"replayed {self.replayed} steps (0-{self.replayed - 1}), "
                            "no divergence")
        if self.replayed < session.count:
            session.diverge(divergence(
                self.replayed, "ended-early", f"the program's run ended after step "
                f"{self.replayed - 1}; the recording has {session.count} steps"))
        session.succeed(f"replayed {self.replayed} steps, no divergence")
