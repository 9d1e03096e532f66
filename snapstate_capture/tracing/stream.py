"""The traced-step stream: compact step items buffered in memory, handed to a writer process.

Per-line steps must cost well under a microsecond (issue 6 point 7), so the tracer does not write
SQL, JSON or hashes on its hot path. It appends small items to one list (``Stream.items``,
shared by every thread: ``list.append`` is atomic, so the order of the list is the order of the
steps). The process's flusher thread (``flusher.py``) hands the list over every
``FLUSH_SECONDS`` as one ``marshal`` message to a writer process (``store.trace_writer``),
which stores steps in chunks (``store.chunks``).

Item forms (all ``marshal``-able; see ``store.chunks`` for the stored form):

- ``int k`` — a ``line`` step of frame ``k >> LINE_BITS`` at line ``k & LINE_MASK``, no change;
- ``(k, name, value, ...)`` — a ``line`` step that rebinds or changed those locals;
- ``name, value, k`` — three flat items, the common case of the former with one scalar: a str
  item is always a name whose value is the next item and whose step key follows (the tracer
  adds the three in one ``list.extend``, so no other thread's item lands between them);
- ``(CODE, ...)`` tuples with a negative first element — call, return, exception, gap steps and
  the records that are not steps (blobs, marshal copies of values, frame openings,
  pending-task lists, time marks).
  ``(REFRESH, fid, lineno, name, value, ...)`` is one of the latter: in call tracing, a caller's
  line and changed locals, caught up at its callee's call so the callee's steps show the caller
  as it is then, not as it was at its own call event.

A value in a step is a *scalar* kept as itself (int, float, bool, None, a short str) or a
reference tuple ``(preview_hash, payload_hash | None, serializer | None)`` to blobs sent in
``BLOB`` items first, or ``("m", key)`` for a value sent as a marshal copy in a ``VALUE`` item
(the writer replaces it by the former before storing); ``()`` marks a deleted name. The tracer
makes them with ``value_encoder.ValueEncoder``.

Crash safety (DESIGN.md "The timeline file", documented choice): data already handed to the
writer process survives a SIGKILL of the recorder — a thread there reads the pipe as soon as data
arrives and the writer stores everything it read. Traced steps still in the recorder's list are
lost then: those of the last hand-over interval — ``FLUSH_SECONDS`` (20 ms) plus the time the
flusher thread waits for the interpreter lock, measured at 50 ms median and under 0.2 s worst
while a traced CPU-bound loop holds it (``bench``-style loop, 4 M line steps) — the price of not
making a system call per line. ``os._exit`` is wrapped while tracing so it hands the list over
first: nothing is lost there. Explicit ``checkpoint`` steps are handed over at once, so for them
"only the step in flight is lost" holds as before. Ordinary ends (return, ``sys.exit``,
exceptions, SIGINT, SIGTERM via ``snapstate record``) flush everything.
"""

from __future__ import annotations

import atexit
import marshal
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
from typing import Any

from ..clocks import Clocks
from ..store.hashing import canonical_json
from .flusher import Flusher
from ..options import CaptureOptions
from ..store.trace_items import TIME


#: Seconds between hand-overs to the writer process (bounds what a SIGKILL can lose).
FLUSH_SECONDS = 0.02
_HEADER = struct.Struct("<I")
#: Buffer of the pipe to the writer process (Linux ``F_SETPIPE_SZ``; 1 MiB is the default cap).
PIPE_BYTES = 1 << 20
#: A held stream (``Stream(begin=...)``) holding more than this many bytes is released.
HELD_BYTES = 64 << 20


class Stream:
    """The buffer of traced items of one run and the writer process that stores them.

    ``start()`` spawns ``python -m snapstate_capture.tracing.trace_writer FILE RUN_ID`` (its own
    session, so a Ctrl-C meant for the program does not kill it before it drained). ``items`` is
    the shared list the tracer appends to; ``flush()`` hands it over; ``close(status, error)``
    flushes, asks the writer to end the run and waits for it. Raises ``OSError`` from ``start``
    when the writer cannot be started; never afterwards (a dead writer only stops recording).
    """

    def __init__(self, path: str, run_id: str, options: CaptureOptions | None = None,
                 begin: Any = None, tally: Any = None, spool: Any = None) -> None:
        self.path = path
        self.run_id = run_id
        #: A run into a database store: its spool (``capture.spooled.SpoolingWriter``, whose
        #: begin is in it), which the writer process takes over; held (locked) here until the
        #: writer says the run ended, so it is never taken for an orphan meanwhile.
        self.spool = spool
        self.options = options
        #: Held stream (``begin`` given): hand-overs wait here, as the marshal messages the
        #: writer would have read, until ``release()`` calls ``begin()`` (which creates the run
        #: in the file), starts the writer and sends them, or ``drop()`` forgets them.
        self._begin = begin
        self._held: list[bytes] | None = [] if begin is not None else None
        self._held_bytes = 0
        self._ending = False  # closed while held: the end message waits with the rest
        self._tally: Any = None  # a held stream's step count: a ``tally`` (``StepTally``)
        self._tally_class = tally
        self.items: list[Any] = []
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._fd: int | None = None
        self.broken = False
        #: ``(step, reason)`` once the writer process stopped storing steps (a write failed
        #: there); None while it stores them.
        self.cut: tuple[int | None, str] | None = None

    def start(self) -> None:
        if self._held is None:
            self._spawn()
        _FLUSHER.add(self)

    def _spawn(self) -> None:
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {**os.environ, "SNAPSTATE_DISABLE": "1"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH"))
                                            if p)
        debug = os.environ.get("SNAPSTATE_DEBUG") == "1"
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "snapstate_capture.tracing.trace_writer", str(self.path),
             self.run_id, *([str(self.spool.spool_path)] if self.spool is not None else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=None if debug else subprocess.DEVNULL, env=env, start_new_session=True,
            close_fds=True)
        assert self._proc.stdin is not None
        self._fd = self._proc.stdin.fileno()
        _widen_pipe(self._fd)
        if self.options is not None:
            self._send(marshal.dumps(("options", pickle.dumps(self.options))))

    @property
    def held(self) -> bool:
        """True while nothing of the run has reached the file (see ``release``)."""
        return self._held is not None

    def release(self, timeout: float = 60.0) -> bool:
        """Write a held stream: create the run in the file (``begin``), start the writer process
        and hand it everything held; if the stream was closed meanwhile, wait (up to
        ``timeout`` seconds) until the writer stored the run's end, as ``close`` does. True
        when the stream is (now) written through; False when that failed (nothing is kept:
        the stream is ``broken``). Never raises."""
        with self._lock:
            held, begin = self._held, self._begin
            if held is None:
                return not self.broken
            self._held, self._begin, self._held_bytes = None, None, 0
            try:
                begin()
                self._spawn()
            except Exception:  # noqa: BLE001 - the program goes on; the run is not kept
                self.broken = True
                self._proc = self._fd = None
                return False
            for data in held:
                self._send(data)
            ending = self._ending
            fd, self._fd = (self._fd, None) if ending else (None, self._fd)
        if ending:
            self._await_end(fd, True, timeout)
        return not self.broken

    def drop(self) -> None:
        """Forget a held stream's steps: nothing of the run is written (a stream already
        released is left as it is). Stops the flusher."""
        _FLUSHER.remove(self)
        with self._lock:
            if self._held is not None:
                self._held, self._begin, self._held_bytes = None, None, 0
                self.items = []

    def flush(self) -> None:
        """Hand every buffered item to the writer process (thread-safe; never raises)."""
        with self._lock:
            items = self.items
            count = len(items)
            if not count or (self._fd is None and self._held is None):
                return
            batch = items[:count]
            del items[:count]
            batch.append((TIME, Clocks.time(), Clocks.monotonic()))
            try:
                data = marshal.dumps(batch)
            except ValueError:
                data = marshal.dumps([_marshal_safe(i) for i in batch])
            self._send(data)
            overflow = self._held is not None and self._held_bytes > HELD_BYTES
        if overflow:
            self.release()  # too much to hold: written from here on, as an unheld stream

    def _send(self, data: bytes) -> None:
        if self._held is not None:
            self._held.append(data)
            self._held_bytes += len(data)
            return
        if self._fd is None:
            return
        try:
            os.write(self._fd, _HEADER.pack(len(data)))
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError:
            self.broken = True
            self._fd = None

    def request_index(self) -> int | None:
        """Flush, then ask the writer for the index the next step will get (None if unknown).
        A held stream counts its own steps, exactly as the writer will (``step_tally``)."""
        if self._held is not None:
            self.flush()
            with self._lock:
                if self._held is not None:
                    if self._tally is None:
                        self._tally = self._tally_class(self.run_id)
                    return self._tally.index(self._held)
        with self._lock:
            if self._fd is None or self._proc is None or self._proc.stdout is None:
                return None
        self.flush()
        with self._lock:
            self._send(marshal.dumps("index?"))
            try:
                line = self._proc.stdout.readline()
                if line.startswith(b"cut "):  # a write failed there: recording stopped
                    at, _, reason = line.decode("utf-8", "replace")[4:].strip().partition(" ")
                    self.cut = (int(at) if at.isdigit() else None, reason)
                    return None
                return int(line)
            except (OSError, ValueError):
                return None

    def fork(self, path: str, run_id: str, tail: int) -> int:
        """Flush, then have the writer go on into run ``run_id`` of ``path`` — a traced
        replay's fork (``trace_fork.py``) — after copying this run's steps from ``tail`` on
        onto it; returns the index the fork's next step gets. Raises ``OSError`` naming the
        reason when the writer refused or is gone (it then goes on as before)."""
        self.flush()
        with self._lock:
            if self._fd is None or self._proc is None or self._proc.stdout is None:
                raise OSError("the trace writer is gone")
            self._send(marshal.dumps(("fork", str(path), run_id, int(tail))))
            line = self._proc.stdout.readline().decode("utf-8", "replace").strip()
        if line.startswith("forked "):
            self.path, self.run_id = str(path), run_id
            return int(line[7:])
        raise OSError(line.partition(" ")[2] or "the trace writer is gone")

    def close(self, status: str, error: dict[str, Any] | None, timeout: float = 60.0) -> None:
        """Flush, end the run with ``status``/``error`` and wait for the writer to finish.
        A held stream keeps the end with its steps, for ``release`` or ``drop``; closing again
        does nothing."""
        if self._ending:
            return
        _FLUSHER.remove(self)  # returns after a flush of it in the flusher thread
        self.flush()
        with self._lock:
            ending = self._fd is not None or self._held is not None
            if ending:
                self._send(marshal.dumps(("end", status, canonical_json(error).decode()
                                          if error else None)))
            if self._held is not None:
                self._ending = True
                return
            fd, self._fd = self._fd, None
        self._await_end(fd, ending, timeout)

    def _await_end(self, fd: int | None, ending: bool, timeout: float) -> None:
        """Close the pipe (``fd``) and wait until the writer says the run is stored."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        _reap(proc)
        try:
            if fd is not None and proc.stdin is not None:
                proc.stdin.close()
            if ending and proc.stdout is not None:
                # Everything is stored once the writer says so; its own exit is not awaited.
                ready, _, _ = select.select([proc.stdout], [], [], timeout)
                if ready:
                    line = proc.stdout.readline()  # "ended", or "ended cut STEP REASON"
                    if line.startswith(b"ended note "):  # where a spool's steps wait
                        _say(line[11:].decode("utf-8", "replace").rstrip("\n"))
                    if line.startswith(b"ended cut ") and self.cut is None:
                        at, _, reason = line.decode("utf-8", "replace")[10:].strip() \
                            .partition(" ")
                        self.cut = (int(at) if at.isdigit() else None, reason)
            else:
                proc.wait(timeout=timeout)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
            self._let_go_of_spool()

    def _let_go_of_spool(self) -> None:
        spool, self.spool = self.spool, None
        if spool is not None:
            spool.close()  # its lock only: the writer process ended the run in it

    def hand_over(self, timeout: float = 10.0) -> None:
        """The process is ending without a word (``os._exit``): flush, close the pipe and wait
        up to ``timeout`` seconds for the writer to store everything it was handed, so the file
        is complete when the process is gone. The run is left ``running`` (readers report it
        ``crashed``). Never raises."""
        _FLUSHER.remove(self)
        self.flush()
        if self._held is not None:
            self.release()  # what the program did so far is kept, as for any traced run
        with self._lock:
            proc, self._proc = self._proc, None
            self._fd = None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=timeout)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self._let_go_of_spool()

    def abandon(self) -> None:
        """In a forked child: drop the buffer and the pipe without touching the writer (the
        child has no flusher thread: ``Flusher.after_fork_in_child``). The lock is made anew:
        the fork may have come while another thread held it (a flush in progress), and the
        child's end of the block takes it."""
        self._lock = threading.Lock()
        self.items = []
        self._held = self._begin = None
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = None
        self._proc = None


#: The process's one flusher thread (``flusher.py``): every open stream is flushed by it.
_FLUSHER = Flusher(FLUSH_SECONDS)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_FLUSHER.after_fork_in_child)

#: Writer processes that said their run is stored and may still be exiting: held until they
#: have, then reaped (``_reap``). A ``Popen`` let go of while its process runs warns
#: (``ResourceWarning: subprocess N is still running``) into the program's stderr when
#: warnings are shown (pytest, ``-W default``), and its process stays a zombie.
_exiting: list[subprocess.Popen[bytes]] = []


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Hold ``proc`` until its process has exited, and reap the ones held before that have
    (their own exit is not waited for: the recorder goes on at the writer's "ended")."""
    _exiting[:] = [held for held in _exiting if held.poll() is None]
    _exiting.append(proc)


def _reap_at_exit() -> None:
    """At the program's exit: give the writers still exiting a moment, then let them be."""
    for held in _exiting:
        try:
            held.wait(timeout=2)
        except (subprocess.TimeoutExpired, OSError):
            held.returncode = -1  # left running: not waited for again, and no warning at exit
    _exiting.clear()


atexit.register(_reap_at_exit)


def _widen_pipe(fd: int) -> None:
    """Give the pipe to the writer process a 1 MiB buffer where Linux allows it (default 64 KiB):
    a hand-over of a few MB then needs a few wake-ups of the writer's reader, not a hundred."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass  # another OS, or a lower limit: the default buffer works, only slower


def _marshal_safe(item: Any) -> Any:
    """``item`` with anything marshal refuses (a str subclass, …) replaced by its repr."""
    try:
        marshal.dumps(item)
        return item
    except ValueError:
        if isinstance(item, tuple):
            return tuple(_marshal_safe(x) for x in item)
        return f"<unmarshallable {type(item).__name__}>"


def _say(line: str) -> None:
    """A line from the writer process for the user (``snapstate: …``) on stderr."""
    try:
        sys.stderr.write(line + "\n")
    except Exception:  # noqa: BLE001 - stderr may be closed; there is nowhere else to say it
        pass
