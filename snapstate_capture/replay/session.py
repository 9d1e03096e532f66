"""The replay child's state: which ``record`` block to replay, and how the replay ends.

``replay_session()`` is None in every process but a replay child; ``record`` asks it for a
recorder (``recorder_for``) when one is installed. The session ends the child itself
(``os._exit``) once the result is known — at a divergence, at the stop step, or at the end of
the replayed block — so no code of the program runs past what was recorded unless the replay
continues live.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..options import CaptureOptions
    from .config import ReplayConfig
    from .recorder import ReplayRecorder

_session: ReplaySession | None = None
#: Held by the thread that ends the replay (``ReplaySession.finish``), never released.
_finishing = threading.Lock()

#: Exit codes of the replay child (a continuation that paused again exits ``EXIT_PAUSED``,
#: 75, see ``capture/waits.py``).
EXIT_OK, EXIT_DIVERGENCE, EXIT_ERROR = 0, 1, 2
#: Replays of at least this many steps print progress (at most once a second).
PROGRESS_MIN_STEPS = 500


def replay_session() -> ReplaySession | None:
    """The session of this replay child, or None in a normal process."""
    return _session


def install(session: ReplaySession | None) -> None:
    """Make ``session`` the process's replay session (None removes it)."""
    from ..capture import api

    global _session
    _session = session
    api.attach_replay(session)


class ReplaySession:
    """One replay: the recorded run, its journal, the comparer and the result.

    Raises ``TimelineError`` from the constructor when the file or run cannot be read.
    """

    def __init__(self, config: ReplayConfig) -> None:
        from ..trust.gate import open_timeline
        from .compare import StepComparer
        from .journal import Journal
        from .relocate import Relocation

        self.config = config
        self.timeline = open_timeline(config.file, trust=config.trust)
        self.run = self.timeline.run(config.run)
        self.count = len(self.run.steps)
        # A function entry is called directly by the child: its block is the child's first.
        entry = self.run.entry
        self.block = 0 if entry.get("kind") == "function" else int(entry.get("block", 0) or 0)
        self.journal = Journal(self.run)
        recorded_cwd = self.run.entry.get("cwd") or os.getcwd()
        #: Recorded paths -> paths here (the parent may start the child in another checkout).
        self.relocation = Relocation(recorded_cwd, os.getcwd())
        lines = None
        if config.remap_lines:
            from .linemap import LineMaps

            lines = LineMaps(self.timeline)
        self.comparer = StepComparer(self.timeline, recorded_cwd, self.relocation, lines)
        self.live_effects = set(config.live_effects)
        self.recorder: Any = None
        self.fork: dict[str, Any] | None = None
        self._started = time.perf_counter()
        self._last_progress = self._started
        self._progress_open = False
        self.lease: Any = None
        if config.lease:
            from .lease_keeper import LeaseKeeper

            lease = config.lease
            self.lease = LeaseKeeper(config.file, lease["run"], lease["token"],
                                     float(lease["ttl"]), self._lease_lost)
            self.lease.start()

    def _lease_lost(self, message: str) -> None:
        sys.stderr.write(f"snapstate: {message}\n")
        self.finish("error", message, EXIT_ERROR, lease_lost=True)

    def resumption(self) -> Any:
        """What the wait at the resume step gets (mode ``resume``): a ``Resumption`` with the
        answer the parent handed over (unpickled: the parent made it) and who gave it."""
        import base64
        import pickle

        from ..capture.waits import Resumption

        data = self.config.resume or {}
        raw = data.get("answer")
        value = pickle.loads(base64.b64decode(raw)) if raw else None
        return Resumption(value, dict(data.get("by") or {}))

    @property
    def recording_complete(self) -> bool:
        """True when the recorded run ended cleanly (its last step is the run's last)."""
        return self.run.status in ("finished", "failed")

    def recorder_for(self, block: int, *, root: Any, name: str, options: CaptureOptions,
                     trace: str | None = None, include: Any = (), exclude: Any = ()
                     ) -> Any:
        """The replay recorder for ``record`` block number ``block``; None for other blocks
        (they run unrecorded). A traced block gets a ``TracedReplayRecorder``."""
        if block != self.block or self.recorder is not None:
            return None
        if trace:
            from .traced import TracedReplayRecorder
            from .traced_stop import STOP_MODES

            if self.config.mode not in ("check", "resume", *STOP_MODES):
                self.fail(f"--{self.config.mode} at a step of a traced run is not supported "
                          "(--pdb, --console, --debugpy and --live are, at call, "
                          "checkpoint and effect steps)")
            self.recorder = TracedReplayRecorder(self, root=root, name=name, options=options,
                                                 trace=trace, include=include, exclude=exclude)
            return self.recorder
        from .recorder import ReplayRecorder

        self.recorder = ReplayRecorder(self, root=root, name=name, options=options)
        return self.recorder

    @property
    def scratch(self) -> str:
        """A scratch timeline beside the result file (traced runs are replayed into it)."""
        return os.path.join(os.path.dirname(self.config.result), "replay.snap")

    # -- progress and results ----------------------------------------------------------------
    def progress(self, index: int) -> None:
        """Keep ``index`` in the progress file (at most 20 times a second) when the parent
        draws a bar; else, on long replays, show ``replaying step i of n`` in place on stderr
        at most once a second when it is a terminal (piped, nothing: issue 21's progress is
        quiet when piped)."""
        if self.config.progress_file:
            now = time.perf_counter()
            if now - self._last_progress >= 0.05:
                self._last_progress = now
                try:
                    with open(self.config.progress_file, "w", encoding="ascii") as handle:
                        handle.write(f"{index + 1}\n")
                except OSError:
                    pass
            return
        if not self.config.progress or self.count < PROGRESS_MIN_STEPS or not _on_terminal():
            return
        now = time.perf_counter()
        if now - self._last_progress < 1.0:
            return
        self._last_progress = now
        sys.stderr.write(f"\rsnapstate: replaying step {index} of {self.count}")
        self._progress_open = True  # one line, rewritten in place
        sys.stderr.flush()

    def finish(self, status: str, message: str, code: int, **fields: Any) -> None:
        """Write the result JSON and end the child with ``code`` (never returns). The first
        caller ends the replay; another thread finishing at the same time waits for the end."""
        _finishing.acquire()
        if self.recorder is not None:
            self.recorder.quiet()
        replayed = self.recorder.replayed if self.recorder is not None else 0
        result = {"status": status, "message": message, "replayed": replayed,
                  "total": self.count, "run": self.run.id, "fork": self.fork,
                  "seconds": round(time.perf_counter() - self._started, 3), **fields}
        if self._progress_open:
            sys.stderr.write("\n")
        if self.lease is not None:
            self.lease.stop(release=True)
        try:
            with open(self.config.result, "w", encoding="utf-8") as handle:
                json.dump(result, handle)
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001 - a closed stream cannot stop the exit
                    pass
            os._exit(code)

    def diverge(self, report: dict[str, Any]) -> None:
        """End the replay at a divergence (exit code 1)."""
        self.finish("divergence", f"divergence at step {report['step']}: {report['message']}",
                    EXIT_DIVERGENCE, divergence=report)

    def refuse(self, message: str) -> None:
        """End a resume whose answer the program's schema refused; nothing was recorded."""
        self.finish("refused", message, EXIT_ERROR)

    def fail(self, message: str) -> None:
        """End the replay because it cannot go on (exit code 2)."""
        self.finish("error", message, EXIT_ERROR)

    def succeed(self, message: str) -> None:
        """End the replay with no divergence (exit code 0). A whole run replayed that was
        recorded ending in an exception says so: the replay met that exception's steps too
        (``; the run ends in ZeroDivisionError: division by zero, as recorded``)."""
        if self.config.to is None and self.recording_complete:
            message += recorded_ending(self.run)
        self.finish("ok", message, EXIT_OK)


#: Longest exception message ``recorded_ending`` quotes, in characters.
ENDING_MESSAGE_MAX = 120


def recorded_ending(run: Any) -> str:
    """``"; the run ends in KIND: MESSAGE, as recorded"`` for a run recorded ending in an
    uncaught exception (its first line, cut to ``ENDING_MESSAGE_MAX``), else ``""``."""
    error = run.error if run.status == "failed" else None
    if not isinstance(error, dict) or not isinstance(error.get("type"), str):
        return ""
    kind = error["type"].rsplit(".", 1)[-1]
    text = str(error.get("message") or "").strip().splitlines()
    said = text[0] if text else ""
    if len(said) > ENDING_MESSAGE_MAX:
        said = said[:ENDING_MESSAGE_MAX - 1] + "…"
    return f"; the run ends in {kind}{': ' + said if said else ''}, as recorded"


def _on_terminal() -> bool:
    """Whether the replay's stderr is a terminal (progress is shown there only)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
