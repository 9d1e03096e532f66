"""Automatic capture: a ``sys.settrace`` tracer that records call, line, return and exception
steps of included code into the traced-step stream (``trace_stream``).

Manners (issue 6 point 3, after PySnooper's ``tracer.py``):

- the previous trace function (``coverage run``, a debugger) is chained — it keeps getting every
  event it asked for — and restored at ``stop()``;
- state is per frame (a closure) and per thread; threads started while recording are traced
  (``threading.settrace``); threads already running get one step with their stack, labelled
  ``not traced``;
- Python drops a trace function that raised (a RecursionError at the recursion limit does this);
  the tracer notices at the next garbage collection or capture point in that thread, reinstalls
  itself and records a ``gap`` step;
- a forked child stops tracing (its steps would interleave with the parent's).

The per-frame work (line steps, returns, exceptions) is ``frame_trace``'s.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import types
from typing import Any, Callable

from ..clocks import Clocks
from ..program_signals import hand_back_unraisable, signal_of
from ..capture.tasks import pending_tasks
from .codeinfo import CodeInfo, analyse
from .frame_trace import local_trace_function
from ..capture.frames import FrameCapturer
from .include import IncludeRule, machinery_below
from ..options import CaptureOptions, traced_options
from ..capture import lineage
from ..store import task_column
from ..store.trace_items import ADOPT, BLOB, GAP, OPEN, TASKS
from .call_frame import CallFrame, held
from .stream import Stream
from .value_encoder import ADDRESS_FLOOR, SCALAR_TYPES, ValueEncoder

_SUSPENDED_LIMIT = 10_000

_active: list[Tracer] = []


class Tracer:
    """Traces one run. ``mode`` is ``"calls"`` or ``"lines"``; ``rule`` decides which files are
    traced; steps go to ``stream`` (an open ``Stream``); ``on_gap(thread)`` is called when a
    dropped tracer was reinstalled. ``start(root)`` / ``stop()`` install and remove it; never
    raises into the program once started."""

    def __init__(self, *, mode: str, rule: IncludeRule, stream: Stream,
                 options: CaptureOptions) -> None:
        if mode not in ("calls", "lines"):
            raise ValueError(f"trace must be 'calls' or 'lines', not {mode!r}")
        self.mode = mode
        self.lines = mode == "lines"
        self.rule = rule
        self.stream = stream
        self.items = stream.items
        self.encoder = ValueEncoder(traced_options(options), stream.items.append)
        self.options = options
        #: the class of this tracer's per-frame states (``CallFrame.for_tracer``)
        self.frame_state = CallFrame.for_tracer(self)
        self.active = False
        self._infos: dict[types.CodeType, CodeInfo | bool] = {}
        self._fids: dict[types.FrameType, int] = {}
        self._suspended: dict[types.FrameType, tuple[Callable[..., Any], int]] = {}
        #: calls mode: fid -> the frame's ``CallFrame``, whose ``refresh`` catches it up
        self._refresh: dict[int, Any] = {}
        self._keys: dict[types.CodeType, tuple[str | None, str | None]] = {}
        self._capturer = FrameCapturer(options)
        self._next_fid = iter(range(1, 1 << 40)).__next__
        self._threads: dict[int, str] = {}
        #: threads whose tracing capture turned off on purpose (``pause``): not a drop
        self._paused: set[int] = set()
        self._prev: Any = None
        self._prev_thread: Any = None
        self._last_tasks: Any = None
        self._lock = threading.RLock()
        self._hook = self._global  # one bound method, so sys.gettrace() can be compared

    # -- installing ------------------------------------------------------------------------
    def start(self, root: types.FrameType | None) -> None:
        """Install in this thread and for new threads; adopt ``root`` (the frame that started
        recording: its later lines are traced in ``lines`` mode); record other threads' stacks."""
        self._prev = sys.gettrace()
        self._prev_thread = threading.gettrace()
        self.active = True
        _active.append(self)
        self._register_thread()
        if root is not None:
            info = self._info(root.f_code)
            if info:
                fid = self._fid_of(root)
                if self.lines and fid:
                    root.f_trace = local_trace_function(self, root, info, fid, {})
                    root.f_trace_lines = True
        threading.settrace(self._hook)
        sys.settrace(self._hook)
        gc.callbacks.append(self._gc_check)
        self._unhook = hand_back_unraisable(lambda culprit: culprit == self._gc_check)

    def stop(self) -> None:
        """Remove the tracer (restoring the previous one) and stop every frame's line tracing."""
        if not self.active:
            return
        self.active = False
        sys.settrace(self._prev)
        threading.settrace(self._prev_thread)
        try:
            gc.callbacks.remove(self._gc_check)
        except ValueError:
            pass
        self._unhook()
        if self in _active:
            _active.remove(self)
        for frame in list(self._fids) + list(self._suspended):
            try:
                if self._prev is None:
                    frame.f_trace = None
            except (AttributeError, ValueError):
                pass
        self._fids.clear()
        self._suspended.clear()

    def abandon(self) -> None:
        """In a forked child: stop tracing and drop everything, writing nothing."""
        self.active = False
        sys.settrace(None)
        threading.settrace(None)
        self.stream.abandon()

    def pause(self) -> Any:
        """Stop tracing this thread until ``resume(token)`` (capture running user code, a
        ``__reduce__``, must not make steps). A garbage collection meanwhile is no dropped
        tracer. Returns the token: the trace function to put back, or None when this thread
        was not traced."""
        saved = sys.gettrace()
        if saved is None:
            return None
        self._paused.add(threading.get_ident())
        sys.settrace(None)
        return saved

    def resume(self, token: Any) -> None:
        """Undo ``pause``: ``token`` is what it returned."""
        if token is None:
            return
        sys.settrace(token)
        self._paused.discard(threading.get_ident())

    def check_installed(self) -> None:
        """Reinstall the tracer in this thread if Python dropped it; records a ``gap`` step."""
        if not self.active or sys.gettrace() is not None:
            return
        ident = threading.get_ident()
        if ident not in self._threads or ident in self._paused:
            return
        sys.settrace(self._hook)
        self.items.append((GAP, self._threads[ident], Clocks.time(), Clocks.monotonic(),
                           "tracer reinstalled: Python had dropped it"))

    def _gc_check(self, phase: str, info: dict) -> None:
        # (what the program's signal handler raises in here, even on entry, Python hands to
        # ``sys.unraisablehook``, which gives it back to the program: ``start``)
        if phase == "stop" and self.active and sys.gettrace() is None:
            try:
                self.check_installed()
            except Exception as exc:  # noqa: BLE001 - a gc callback must never raise
                if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                    raise

    def _register_thread(self) -> str:
        """This thread's name, remembering that it is traced (idents are reused: re-read)."""
        name = threading.current_thread().name
        self._threads[threading.get_ident()] = name
        return name

    # -- the global trace function (call events) -------------------------------------------
    def _global(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        prev = self._prev
        theirs = None
        if prev is not None:
            theirs = prev(frame, event, arg)
            if sys.gettrace() is not self._hook:
                # coverage's C tracer, called from Python at a call event, installs itself
                # back as the thread's trace function; take our place again (it still gets
                # every event through us).
                sys.settrace(self._hook)
        if not self.active:
            return theirs
        info = self._infos.get(frame.f_code)
        if info is None:
            info = self._info(frame.f_code)
        if info is False:
            return theirs
        # ``encoder.begin_event()`` / ``end_event()``, inline: two calls less at every call
        encoder = self.encoder
        mine = not encoder.event
        if mine:
            encoder.event = threading.get_ident()
        try:
            ours = self._call(frame, info)
        except Exception as exc:  # noqa: BLE001 - a capture failure never reaches the program
            if exc.__class__ is not RecursionError and signal_of(exc) is not None:
                raise  # what the program's signal handler raised here: the program's
            ours = None
        finally:
            if mine:
                encoder.event = 0
                encoder.memo = None
        if theirs is None:
            if ours is not None and not self.lines and self.active:
                # (a replay stopped in pdb at this call removed the tracer: pdb's own
                # trace function needs the frame's lines for ``n`` and ``s``)
                frame.f_trace_lines = False
            return ours
        if ours is None:
            return theirs
        return _chain(ours, theirs)

    def _info_of(self, code: types.CodeType) -> CodeInfo | bool:
        """The ``CodeInfo`` of ``code`` (False: not traced), analysed on first sight."""
        info = self._infos.get(code)
        return self._info(code) if info is None else info

    def _info(self, code: types.CodeType) -> CodeInfo | bool:
        info: CodeInfo | bool = False
        if self.rule.includes(code.co_filename):
            info = analyse(code, self.options.values)
            if info.comprehension:
                info = False
        self._infos[code] = info
        return info

    def _call(self, frame: types.FrameType, info: CodeInfo) -> Any:
        resumed = self._suspended.pop(frame, None) if info.suspends else None
        if resumed is not None:
            self._fids[frame] = resumed[1]
            self._tasks_changed()
            return resumed[0]
        if frame.f_back not in self._fids and self._called_by_snapstate(frame):
            return None
        fid, known = self._open(frame, info, OPEN)
        if info.suspends:
            self._tasks_changed()
        if self.lines:
            return local_trace_function(self, frame, info, fid, known)
        return self.frame_state(frame, info, fid, known).local

    def _called_by_snapstate(self, frame: types.FrameType) -> bool:
        """True when ``frame`` runs for snapstate's own work (``include.own_kind``): the nearest
        traced caller or snapstate frame below it is a snapstate frame of the machinery (replay
        reading its recording with ``json``, a store write), not one handing over to the
        program. Such a call is never a program step, nor is anything it calls. A hook around
        a library call (``WRAPS``) is looked through: snapstate's flusher starts its thread
        through ``lineage``'s hook of ``Thread.start``, and with ``--include '*'`` that
        ``Thread.start`` was a step of the program."""
        return machinery_below(frame.f_back, self._fids)

    def _fid_of(self, frame: types.FrameType) -> int:
        """The fid of ``frame``, adopting it (and its untraced included callers) if needed."""
        fid = self._fids.get(frame)
        if fid is not None:
            return fid
        info = self._info_of(frame.f_code)
        if info is False:
            return 0
        return self._open(frame, info, ADOPT)[0]

    def _parent(self, frame: types.FrameType) -> tuple[int, types.FrameType | None]:
        """The nearest traced caller of ``frame`` and its fid (adopted if new), or (0, None)."""
        back = frame.f_back
        while back is not None:
            fid = self._fids.get(back)
            if fid is not None:
                return fid, back
            info = self._info_of(back.f_code)
            if info is not False:
                return self._open(back, info, ADOPT)[0], back
            back = back.f_back
        return 0, None

    def _open(self, frame: types.FrameType, info: CodeInfo, code: int
              ) -> tuple[int, dict[str, tuple[Any, Any]]]:
        """Register ``frame`` and emit its OPEN (a ``call`` step) or ADOPT (no step) item with a
        snapshot of its locals; return ``(fid, {name: (object, stored value)})``."""
        caller = frame.f_back
        fids = self._fids
        parent = fids.get(caller)  # the usual case: the caller is traced (no walk)
        if parent is None:
            parent, caller = self._parent(frame)
        if caller is not None and not self.lines:
            # Call tracing sees no lines: the caller ran since its last step; catch it up
            # (line tracing keeps callers current at every line).
            state = self._refresh.get(parent)
            if state is not None:
                state.refresh(caller)
        fid = self._next_fid()
        fids[frame] = fid
        thread = threading.current_thread().name  # ``_register_thread``, inline
        self._threads[threading.get_ident()] = thread
        # who made the frame, for replay: its asyncio task (by name, if any) and lineage
        task = task_column.join(*lineage.current_and_task_name())
        known: dict[str, tuple[Any, Any]] = {}
        pairs = self._snapshot(frame.f_locals, info, known)
        keys = self._keys.get(frame.f_code)
        if keys is None:
            keys = self._code_keys(frame)
        self.items.append((code, fid, parent, thread, task, info.function, info.filename,
                           keys[0], keys[1], frame.f_lineno, Clocks.time(), Clocks.monotonic(),
                           *pairs))
        if code == ADOPT and not self.lines:
            self.frame_state(frame, info, fid, known)  # registers its catch-up
        return fid, known

    def _code_keys(self, frame: types.FrameType) -> tuple[str | None, str | None]:
        """Code hash and saved-source hash of the frame's code (source sent once per file)."""
        keys = self._keys.get(frame.f_code)
        if keys is None:
            from ..capture.frames import StackCapture

            out = StackCapture()
            code_hash = self._capturer._code_hash(frame.f_code)
            source_hash = self._capturer._source(frame.f_code.co_filename, frame.f_globals, out)
            for key, data in out.blobs.items():
                if key not in self.encoder.sent:
                    self.encoder.sent.add(key)
                    self.items.append((BLOB, key, data))
            keys = self._keys[frame.f_code] = (code_hash, source_hash)
        return keys

    def _snapshot(self, values: dict[str, Any], info: CodeInfo,
                  known: dict[str, tuple[Any, Any]]) -> list[Any]:
        """``[name, stored value, ...]`` of the locals ``values``; ``known[name]`` gets
        ``(object, stored value)`` of each."""
        pairs: list[Any] = []
        encode = self.encoder.encode
        secret = info.secret
        module = info.module
        scalar = SCALAR_TYPES
        for name, value in list(values.items()):
            if module and name.startswith("__") and name.endswith("__"):
                continue
            if value.__class__ in scalar and name not in secret and (
                    value.__class__ is not int or value < ADDRESS_FLOOR or value & 7):
                ref = value  # ``encode``'s first case, inline: most locals of most calls
            elif name in secret and self.encoder.options.values.redacts(name, value):
                ref = self.encoder.redacted(value)
            else:
                ref = encode(value, name)
                value = held(value)  # kept weakly where it can be (``call_frame.held``)
            pairs.append(name)
            pairs.append(ref)
            known[name] = (value, ref)
        return pairs

    def _tasks_changed(self) -> None:
        tasks = pending_tasks()
        if tasks is not None and tasks != self._last_tasks:
            self._last_tasks = tasks
            self.items.append((TASKS, tasks))

    # -- per-frame local trace functions ---------------------------------------------------
    def _suspend(self, frame: types.FrameType, local: Any, fid: int) -> None:
        """Keep a suspended generator's or coroutine's state until it resumes (bounded)."""
        self._fids.pop(frame, None)
        if len(self._suspended) >= _SUSPENDED_LIMIT:
            self._refresh.pop(self._suspended.pop(next(iter(self._suspended)))[1], None)
        self._suspended[frame] = (local, fid)


def _chain(ours: Any, theirs: Any) -> Any:
    """A local trace function calling ours and the previous tracer's, each while it wants to."""
    def both(frame: types.FrameType, event: str, arg: Any) -> Any:
        nonlocal ours, theirs
        if ours is not None:
            ours = ours(frame, event, arg)
        if theirs is not None:
            theirs = theirs(frame, event, arg)
        return both if (ours is not None or theirs is not None) else None
    return both


def _after_fork_in_child() -> None:
    for tracer in list(_active):
        tracer.abandon()
    _active.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
