"""The recorder's writer for a database store: every change goes into a local spool file
(``store.spool``) and a spool writer process (``capture.spool_writer``) stores it, so the
program never waits on the database, keeps running while it restarts or the network drops,
and a killed program loses at most the step it was writing.

``SpoolingWriter`` has the shape of ``store.writer.TimelineWriter`` as the recorder uses it
(``begin_run``, ``append_step``, ``has_blob``, ``next_index``, ``end_run``, ``close``); the
chain, seal and signature are made by the writer process, which signs with the same user key.

A traced run (``--trace calls|lines``) is spooled too: the recorder makes the spool and spools
the run's begin (``start=False``: no writer process yet), then its trace writer process adopts
the spool (``adopt=``), appends the traced steps as chunks and starts the writer process; the
recorder keeps its lock on the spool until the run has ended.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import select
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from ..clocks import Clocks
from ..errors import TimelineError, WriteFailed
from ..store.locations import location_label
from ..store.spool import SpoolFile, spool_dir
from ..store.processes import process_facts
from ..store.step_record import StepRecord

#: Seconds the end of a recording waits for the writer process to store what is spooled
#: before the program goes on (the writer keeps storing it in the background).
WAIT_ENV = "SNAPSTATE_SPOOL_WAIT"
DEFAULT_WAIT = 10.0
#: How often (in steps) the recorder checks that its writer process is still there.
_CHECK_EVERY = 64
_MAX_RESPAWNS = 3


def start_writer(spool: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m snapstate_capture.capture.spool_writer SPOOL`` in its own session
    (a Ctrl-C or a killed program group does not stop it storing what was spooled); its stdin
    is the recorder's liveness pipe, its stdout says ``stored`` or ``cut STEP REASON``."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "SNAPSTATE_DISABLE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    debug = os.environ.get("SNAPSTATE_DEBUG") == "1"
    return subprocess.Popen(
        [sys.executable, "-m", "snapstate_capture.capture.spool_writer", str(spool)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=None if debug else subprocess.DEVNULL, env=env, start_new_session=True,
        close_fds=True)


class SpoolingWriter:
    """Spools one run for the store at ``url`` and keeps its writer process going.

    Raises ``OSError`` from the constructor when the spool cannot be made, ``TimelineError``
    when psycopg is missing (the recorder then records nothing and says why). ``append_step`` raises ``WriteFailed`` when the spool cannot
    be written (a full disk) or the writer process gave up on the store (``cut``).
    """

    def __init__(self, url: str, *, signer: Any = None, start: bool = True,
                 adopt: Path | None = None, say: Any = None) -> None:
        self.url = url
        self.path = location_label(url)
        if importlib.util.find_spec("psycopg") is None:  # said now, not by the writer later
            raise TimelineError(self.path, "a PostgreSQL store needs psycopg: "
                                           "pip install 'snapstate[postgres]'")
        if adopt is not None:
            # The trace writer process goes on with a spool its recorder made (and holds).
            self.run_id = adopt.stem
            self._spool = SpoolFile(adopt, url, self.run_id, existing=True)
            fcntl.flock(self._spool._fd, fcntl.LOCK_SH)  # type: ignore[arg-type]
            final = adopt
        else:
            self.run_id = uuid.uuid4().hex
            directory = spool_dir()
            final = directory / f"{self.run_id}.spool"
            making = directory / f".{self.run_id}.new"
            self._spool = SpoolFile(making, url, self.run_id)
            # Held for the recorder's life: a spool nobody holds is an orphan, which the next
            # spool writer for the store picks up (``capture.spool_writer``). Taken before the
            # spool has its findable name, so no writer can take it for an orphan meanwhile.
            fcntl.flock(self._spool._fd, fcntl.LOCK_SH)  # type: ignore[arg-type]
            os.rename(making, final)
        self._spool.path = self.spool_path = final
        self._owner = os.getpid()
        self._sent: set[str] = set()
        self._steps = 0
        self._ended = False
        self._respawns = 0
        self._said = say
        #: None when ``start`` is False: the run's changes go on in another process (a traced
        #: run's trace writer adopts the spool and starts the writer process itself).
        self._proc: subprocess.Popen[bytes] | None = start_writer(final) if start else None

    def start_writer(self) -> None:
        """Start the writer process of a spool made with ``start=False`` (tracing could not
        start after all: the recorder goes on with checkpoints itself)."""
        if self._proc is None:
            self._proc = start_writer(self.spool_path)

    # -- the recorder's writer interface ------------------------------------------------------
    def begin_run(self, *, name: str, entry: dict[str, Any], env: dict[str, Any],
                  parent: tuple[str, int] | None = None,
                  blobs: dict[str, bytes] | None = None) -> str:
        """Spool the run's start; return its id (made here: the store sees it when the writer
        process stores it)."""
        self._write(("begin", {"name": name, "entry": entry, "env": env,
                               "parent": list(parent) if parent else None,
                               "blobs": dict(blobs or {}), "run_id": self.run_id,
                               "facts": process_facts()}))
        self._sent.update(blobs or ())
        return self.run_id

    def has_blob(self, key: str) -> bool:
        """True when blob ``key`` (hex) was spooled already (the store gets it once)."""
        return key in self._sent

    def append_step(self, run_id: str, record: StepRecord,
                    effect: dict[str, Any] | None = None) -> int:
        """Spool ``record`` (and ``effect``, written with it) as the run's next step."""
        if self._steps % _CHECK_EVERY == 0:
            self._check_writer()
        self._write(("step", vars(record), effect))
        self._sent.update(record.blobs)
        index = self._steps
        self._steps += 1
        return index

    def append_chunk(self, run_id: str, count: int, data: bytes,
                     blob_items: dict[str, bytes], *,
                     manifests: set[str] | frozenset = frozenset(),
                     bases: dict[str, str] | None = None) -> int:
        """Spool ``count`` traced steps encoded as one chunk (``store.chunks``) and the blobs
        they refer to (``TimelineWriter.append_chunk``, with its ``manifests`` and ``bases``);
        return the first step's index."""
        self._check_writer()
        if manifests or bases:
            self._write(("chunk", count, data, blob_items, sorted(manifests), bases or {}))
        else:
            self._write(("chunk", count, data, blob_items))
        self._sent.update(blob_items)
        first = self._steps
        self._steps += count
        return first

    def next_index(self, run_id: str) -> int:
        return self._steps

    def attach_run(self, run_id: str) -> bool:
        """Nothing to read back: the spool holds the run from its start (the trace writer
        process takes over a spool holding only its ``begin``). True."""
        return True

    def end_run(self, run_id: str, status: str, error: dict[str, Any] | None = None) -> None:
        """Spool the run's end (stored after every step before it). When the spool cannot
        take it (a full disk: the run is being marked ``truncated``), the end goes to the
        writer process on its pipe instead (``spool_writer``), stored after what was
        spooled; ``WriteFailed`` only when neither could take it."""
        frame = ("end", status, json.dumps(error) if error else None)
        try:
            self._write(frame)
        except WriteFailed:
            if not self._pipe_end(frame):
                raise
        self._ended = True

    def _pipe_end(self, frame: tuple[str, str, str | None]) -> bool:
        """Send the run's end on the writer process's pipe; False when there is none."""
        proc = self._proc
        if proc is None or proc.stdin is None or os.getpid() != self._owner:
            return False
        try:
            proc.stdin.write(b"end " + json.dumps(list(frame[1:])).encode() + b"\n")
            proc.stdin.flush()
        except (OSError, ValueError):
            return False
        return True

    def close(self) -> None:
        """Close the spool and the liveness pipe; when the run ended, wait (``WAIT_ENV``
        seconds at most) for the writer process to say everything is stored, and otherwise
        say once where the rest waits. Never raises."""
        if os.getpid() != self._owner:
            return
        self._spool.close()
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            if self._ended and proc.stdout is not None:
                deadline = Clocks.monotonic() + _wait_seconds()
                line, why = b"", ""
                while True:
                    line = _read_line(proc.stdout, max(deadline - Clocks.monotonic(), 0.0))
                    if not line.startswith(b"waiting "):
                        break
                    why = f" ({line[8:].decode('utf-8', 'replace').strip()})"
                if line.startswith(b"cut "):
                    self._say(f"recording stopped at step {_cut(line)[0]}: {_cut(line)[1]}")
                elif not line.startswith(b"stored"):
                    self._say(f"the store has not taken every step yet{why}; they wait in "
                              f"{self.spool_path} and a background writer stores them when "
                              "the store is reachable")
        except (OSError, ValueError):
            pass

    # -- inside ---------------------------------------------------------------------------
    def _write(self, change: Any) -> None:
        if os.getpid() != self._owner:  # a forked child: the spool is its parent's
            raise WriteFailed(self.path, "recording is not continued in a forked process")
        try:
            self._spool.append(change)
        except (OSError, ValueError) as exc:
            problem = "the spool's disk is full" if getattr(exc, "errno", None) == 28 else \
                f"the spool could not be written ({exc})"
            raise WriteFailed(self.path, problem) from exc

    def _check_writer(self) -> None:
        """Raise ``WriteFailed`` when the writer process gave up on the store; start a new
        one (it goes on where the spool was stored up to) when it is gone otherwise."""
        proc = self._proc
        if proc is None or proc.poll() is None:
            return
        said = proc.stdout.read().splitlines() if proc.stdout is not None else []
        line = next((text for text in said if text.startswith(b"cut ")), b"")
        if line:
            at, reason = _cut(line)
            failure = WriteFailed(self.path, reason)
            failure.at_step = at  # type: ignore[attr-defined]
            raise failure
        if self._respawns < _MAX_RESPAWNS:
            self._respawns += 1
            self._proc = start_writer(self.spool_path)

    def _say(self, message: str) -> None:
        if self._said is not None:
            self._said(f"snapstate: {self.path}: {message}")
            return
        try:
            sys.stderr.write(f"snapstate: {self.path}: {message}\n")
        except Exception:  # noqa: BLE001 - stderr may be closed; there is nowhere else to say it
            pass


def _read_line(stream: Any, timeout: float) -> bytes:
    """One line from ``stream`` if one comes within ``timeout`` seconds, else ``b""``."""
    deadline = Clocks.monotonic() + timeout
    while True:
        ready, _, _ = select.select([stream], [], [], max(deadline - Clocks.monotonic(), 0))
        if ready:
            return stream.readline()
        if Clocks.monotonic() >= deadline:
            return b""


def _cut(line: bytes) -> tuple[int | None, str]:
    at, _, reason = line.decode("utf-8", "replace")[4:].strip().partition(" ")
    return (int(at) if at.isdigit() else None), reason


def _wait_seconds() -> float:
    try:
        return max(float(os.environ.get(WAIT_ENV, DEFAULT_WAIT)), 0.0)
    except ValueError:
        return DEFAULT_WAIT
