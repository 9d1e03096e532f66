"""Runs and steps: the ``record`` block, ``checkpoint()``, ``@step`` and the active recorder.

One ``Recorder`` exists per ``record`` use (one run). While it is active, capture points in any
thread or asyncio task of the process append steps to it. Outside a ``record`` block every
capture point is a cheap no-op. Nothing here raises into the user's program: a capture failure
is recorded on the step (or, if even that fails, counted and reported once on stderr).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from typing import Any

from .environment import entry_facts, environment_facts
from .frames import FrameCapturer, StackCapture
from .options import CaptureOptions
from .store.writer import StepRecord, TimelineWriter
from .values.exceptions import describe_exception

#: Set to "1" to make every ``record`` a no-op (a kill switch for production).
DISABLE_ENV = "SNAPSTATE_DISABLE"

_active: list[Recorder] = []


def active_recorder() -> Recorder | None:
    """Return the innermost active recorder, or None outside any ``record`` block."""
    return _active[-1] if _active else None


def current_thread_name() -> str:
    """Name of the calling thread (``MainThread``, ``Thread-1 (worker)``, …)."""
    return threading.current_thread().name


def current_task_name() -> str | None:
    """Name of the running asyncio task in this thread, or None (asyncio never imported here)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        if asyncio._get_running_loop() is None:
            return None
        task = asyncio.current_task()
    except RuntimeError:
        return None
    return task.get_name() if task is not None else None


class Recorder:
    """Records one run into a timeline file.

    ``path``: the ``.snap`` file (created or appended to). ``name``: the run's name.
    ``root``: the frame the run was started from; saved stacks stop there.
    """

    def __init__(self, path: str | os.PathLike[str], *, name: str, options: CaptureOptions,
                 root: types.FrameType | None, parent: tuple[str, int] | None = None,
                 entry: dict[str, Any] | None = None) -> None:
        self.path = path
        self.name = name
        self.options = options
        self.root = root
        self.parent = parent
        self.entry = entry
        self.run_id: str | None = None
        self.capture_errors = 0
        self._writer: TimelineWriter | None = None
        self._frames = FrameCapturer(options)
        self._last_digests: dict[str, dict[int, dict[str, str]]] = {}
        self._reentry = threading.local()
        self._warned = False

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> bool:
        """Open the file and create the run; False (with a warning on stderr) if impossible."""
        try:
            self._writer = TimelineWriter(self.path)
            self.run_id = self._writer.begin_run(
                name=self.name, entry=self.entry or entry_facts(), env=environment_facts(),
                parent=self.parent)
        except Exception as exc:  # noqa: BLE001 - recording is optional, the program is not
            self._warn(f"not recording: {exc}")
            self._writer = None
            return False
        return True

    def finish(self, exc: BaseException | None) -> None:
        """End the run: ``finished``, or ``failed`` with ``exc`` recorded; closes the file."""
        writer = self._writer
        if writer is None or self.run_id is None:
            return
        try:
            if exc is None or (isinstance(exc, SystemExit) and exc.code in (0, None)):
                writer.end_run(self.run_id, "finished")
            else:
                writer.end_run(self.run_id, "failed", describe_exception(exc))
        except Exception as err:  # noqa: BLE001
            self._warn(f"could not end run: {err}")
        finally:
            writer.close()
            self._writer = None

    @property
    def recording(self) -> bool:
        return self._writer is not None

    # -- capture ---------------------------------------------------------------------------
    def capture(self, kind: str, frame: types.FrameType | None, *, label: str | None = None,
                extra: dict[str, Any] | None = None, lineno: int | None = None) -> int | None:
        """Append one step of ``kind`` with the stack ending at ``frame``; return its index.

        ``extra`` values are captured with the step (checkpoint extras, return values). Never
        raises; returns None when nothing could be written. Re-entrant calls (capture code
        triggering capture) are ignored.
        """
        if self._writer is None or getattr(self._reentry, "busy", False):
            return None
        self._reentry.busy = True
        try:
            return self._capture(kind, frame, label, extra, lineno)
        except Exception as exc:  # noqa: BLE001 - a capture failure is recorded, never thrown
            self.capture_errors += 1
            self._warn(f"capture failed at a {kind} step: {type(exc).__name__}: {exc}")
            return None
        finally:
            self._reentry.busy = False

    def _capture(self, kind: str, frame: types.FrameType | None, label: str | None,
                 extra: dict[str, Any] | None, lineno: int | None) -> int | None:
        wall, mono = time.time(), time.monotonic()
        frames = self._frames.walk(frame, self.root)
        stack: StackCapture = self._frames.capture(frames, innermost_lineno=lineno)
        extra_refs = {}
        for name, value in (extra or {}).items():
            extra_refs[name] = self._frames.value_ref(value, name, stack)
        thread = current_thread_name()
        n_changed = self._count_changes(thread, frames, stack.innermost_digests)
        record = StepRecord(
            kind=kind, label=label, wall=wall, mono=mono, thread=thread,
            task=current_task_name(), function=stack.function, filename=stack.filename,
            lineno=stack.lineno, depth=len(stack.frames), frames=stack.frames,
            extra=extra_refs, errors=stack.errors, n_changed=n_changed,
            blobs={k: v for k, v in stack.blobs.items() if not self._writer.has_blob(k)},
            manifests=stack.manifests, bases=stack.bases)
        if stack.errors:
            self.capture_errors += len(stack.errors)
        writer = self._writer
        if writer is None or self.run_id is None:
            return None
        try:
            return writer.append_step(self.run_id, record)
        except BaseException:
            self._frames.forget()  # cached refs may name blobs that were rolled back
            raise

    def _count_changes(self, thread: str, frames: list[types.FrameType],
                       digests: dict[str, str]) -> int:
        """Number of locals added, removed or changed since the innermost frame's previous step.

        Remembers digests only for frames still on this thread's stack, so memory stays bounded.
        """
        if not frames:
            return 0
        known = self._last_digests.setdefault(thread, {})
        key = id(frames[-1])
        previous = known.get(key)
        live = {id(f) for f in frames}
        for stale in [k for k in known if k not in live]:
            del known[stale]
        known[key] = digests
        if previous is None:
            return len(digests)
        changed = sum(1 for name, d in digests.items() if previous.get(name) != d)
        return changed + sum(1 for name in previous if name not in digests)

    def capture_exception(self, exc: BaseException) -> None:
        """Append an ``exception`` step holding the stack and locals at the raise point."""
        tb = exc.__traceback__
        if tb is None:
            return
        while tb.tb_next is not None:
            tb = tb.tb_next
        self.capture("exception", tb.tb_frame, label=f"{type(exc).__name__}",
                     extra={"exception": exc}, lineno=tb.tb_lineno)

    def _warn(self, message: str) -> None:
        if self._warned:
            return
        self._warned = True
        try:
            sys.stderr.write(f"snapstate: {self.path}: {message}\n")
        except Exception:  # noqa: BLE001 - stderr may be closed; there is nowhere else to say it
            pass
