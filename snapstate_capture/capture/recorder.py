"""Runs and steps: the ``record`` block, ``checkpoint()``, ``@step`` and the active recorder.

One ``Recorder`` exists per ``record`` use (one run). While it is active, capture points in any
thread or asyncio task of the process append steps to it. Outside a ``record`` block every
capture point is a cheap no-op. Nothing here raises into the user's program: a capture failure
is recorded on the step (or, if even that fails, counted and reported once on stderr).

This module holds the run's life: its start (entry facts, key, writer), its end (``finished``,
``failed``, ``truncated``) and its pause (``waiting``, ``sleeping``). Taking steps is
``StepCapturing``'s (``step_capture.py``); a traced run's tracer and trace writer process are
``RunTracing``'s (``run_tracing.py``).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import types
import uuid
from typing import Any

from . import lineage, rng
from .environment import entry_facts, environment_facts
from .frames import FrameCapturer
from .address_layout import address_facts
from .hashseed import seed_facts
from .run_tracing import RunTracing
from .step_capture import StepCapturing
from .tasks import call_site
from ..trust.keys import KeyFileError, ensure_key, warn_unsigned_once
from ..options import CaptureOptions
from ..trust.signing import RunSigner
from ..errors import WriteFailed
from ..store.locations import is_store_url
from ..store.processes import process_facts
from ..store.writer import TimelineWriter
from ..store.hashing import content_hash
from ..values.exceptions import describe_exception

#: Set to "1" to make every ``record`` a no-op (a kill switch for production).
DISABLE_ENV = "SNAPSTATE_DISABLE"
#: Set to "0" to write a run into a database store directly, without the local spool.
SPOOL_ENV = "SNAPSTATE_SPOOL"

_active: list[Recorder] = []
#: ``entry["lineage"]`` of runs whose steps and effects carry lineages (``lineage.py``); runs
#: without it keyed effects by task or thread name.
LINEAGE_VERSION = 1
#: ``entry["chunked_locals"]`` of traced runs whose frames' big lists and dicts are stored by
#: chunks (``CaptureOptions.chunked_locals``); a replay stores them as its recording did.
CHUNKED_LOCALS_VERSION = 1
#: ``entry["bounded"]`` of traced runs whose big values were decided counting what dill writes
#: by value (``CaptureOptions.bound_by_value``, ``tracing/big_values.reach``).
BOUNDED_VERSION = 1


def _recording() -> bool:
    return bool(_active)


def active_recorder() -> Recorder | None:
    """Return the innermost active recorder, or None outside any ``record`` block."""
    return _active[-1] if _active else None


class Recorder(RunTracing, StepCapturing):
    """Records one run into a timeline file.

    ``path``: the ``.snap`` file (created or appended to). ``name``: the run's name.
    ``root``: the frame the run was started from; saved stacks stop there.
    """

    def __init__(self, path: str | os.PathLike[str], *, name: str, options: CaptureOptions,
                 root: types.FrameType | None, parent: tuple[str, int] | None = None,
                 entry: dict[str, Any] | None = None, encrypt: bool = False, block: int = 0,
                 entry_blobs: dict[str, bytes] | None = None, trace: str | None = None,
                 include: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
                 held: bool = False) -> None:
        self.path = path
        #: A held traced run reaches the file only when kept (``keep``/``discard``).
        self.held = bool(held and trace and not encrypt)
        self.block = block
        self.entry_blobs = entry_blobs or {}
        self.name = name
        self.options = options
        self.root = root
        self.parent = parent
        self.entry = entry
        self.encrypt = encrypt
        self.run_id: str | None = None
        self.capture_errors = 0
        self._writer: TimelineWriter | None = None
        self._frames = FrameCapturer(options)
        self._last_digests: dict[str, dict[int, dict[str, str]]] = {}
        self._reentry = threading.local()
        self._warned = False
        # (exception type, code, line) of the last step if it was an exception step: the same
        # exception leaving a @step function and then the record block is one step, not two.
        # Holds a class and a code object only, never the exception or its frames.
        self._last_raise_point: tuple[type, types.CodeType, int] | None = None
        #: Effect journal state: next ``seq`` and per-task effect counts (see ``effects.py``).
        self.effect_seq = 0
        self.effect_counts: dict[str, int] = {}
        self.effect_lock = threading.Lock()
        self.trace = trace
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self._stream: Any = None
        self._tracer: Any = None
        self._full_lock = threading.Lock()
        #: Why and where recording was cut short (a write failed), or None.
        self._fault: dict[str, Any] | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> bool:
        """Open the file and create the run; False (with a warning on stderr) if impossible."""
        lineage.begin_run(_recording)
        try:
            key = self._user_key()
            if self.encrypt:
                if key is None:
                    raise KeyFileError("encrypt=True needs your key, and it cannot be made: "
                                       "set SNAPSTATE_KEY to a key file in a writable place")
                from ..trust.encryption import Sealer

                self._frames.sealer = Sealer(key)
            entry = dict(self.entry or entry_facts(self.options))
            if not is_store_url(self.path):  # where the file lay beside the program
                entry.setdefault("timeline", os.path.realpath(self.path))  # (replay/relocate.py)
            entry_blobs = self.entry_blobs
            if self._frames.sealer is not None:
                entry, entry_blobs = _seal_entry(entry, entry_blobs, self._frames.sealer)
            entry.setdefault("block", self.block)
            for fact, value in {**seed_facts(), **address_facts()}.items():
                entry.setdefault(fact, value)
            entry["lineage"] = LINEAGE_VERSION  # steps and effects carry lineages
            if self.trace and self.options.chunked_locals:
                entry["chunked_locals"] = CHUNKED_LOCALS_VERSION
            if self.trace and self.options.bound_by_value:
                entry["bounded"] = BOUNDED_VERSION
            if self.trace:  # a replay bounds the values this run bounded (``probe_limit``)
                entry.setdefault("probe_limit", self.options.probe_limit)
            if self.trace and isinstance(entry.get("record"), dict) and "preloaded" not in entry:
                from ..tracing.include import IncludeRule, preloaded_modules

                entry["preloaded"] = preloaded_modules(IncludeRule(self.include, self.exclude))
            states = rng.save_states()
            entry["rng"] = {name: blob_key for name, (blob_key, _) in states.items()}
            header = dict(name=self.name, entry=entry, env=environment_facts(),
                          parent=self.parent, blobs={**entry_blobs, **dict(states.values())})
            if self.held:  # begun in the file only when kept, with this id and these facts
                self.run_id = uuid.uuid4().hex
                header.update(run_id=self.run_id, facts=process_facts())
            self._begin_in_file = functools.partial(self._begin_run, key, header)
            if not self.held:
                self._writer = self._begin_in_file(keep_open=True)
        except Exception as exc:  # noqa: BLE001 - recording is optional, the program is not
            self._warn(f"not recording: {exc}")
            self._writer = None
            return False
        if self.trace:
            try:
                if self.encrypt:
                    raise RuntimeError("encrypted runs are not traced yet (checkpoints only)")
                self._start_tracing()
            except Exception as exc:  # noqa: BLE001
                self._warn(f"not tracing: {type(exc).__name__}: {exc}")
                self._stream = self._tracer = None
                if self.held:  # checkpoints only, written as they come
                    self.held = False
                    try:
                        self._writer = self._begin_in_file(keep_open=True)
                    except Exception as err:  # noqa: BLE001
                        self._warn(f"not recording: {err}")
                        return False
        return True

    def _begin_run(self, key: Any, header: dict[str, Any], keep_open: bool = False
                   ) -> TimelineWriter | None:
        """Create the run in the file (``header``: ``TimelineWriter.begin_run``'s arguments);
        returns the open writer when ``keep_open``, else closes it. Raises what the writer
        raises."""
        writer = self._open_writer(RunSigner(key))
        try:
            run_id = writer.begin_run(**header)
            header.update(run_id=run_id)  # a fallback to checkpoints only begins it once
            self.run_id = run_id
        except BaseException:
            writer.close()
            raise
        if keep_open:
            return writer
        writer.close()
        return None

    def _open_writer(self, signer: RunSigner) -> Any:
        """The run's writer: a ``TimelineWriter`` on a file; on a database store a
        ``SpoolingWriter`` (local spool, writer process: the program never waits on the
        database; a traced run's trace writer process goes on with the spool) unless the run
        is held (begun only when kept) or ``SNAPSTATE_SPOOL=0``."""
        if is_store_url(self.path) and not self.held and \
                os.environ.get(SPOOL_ENV, "1") != "0":
            from .spooled import SpoolingWriter

            # A traced run's steps are spooled by its trace writer process, which takes the
            # spool over (and starts the spool's writer process) once the run is begun in it.
            return SpoolingWriter(str(self.path), signer=signer, start=not self.trace)
        return TimelineWriter(self.path, signer=signer)

    def finish(self, exc: BaseException | None) -> None:
        """End the run: ``finished``, or ``failed`` with ``exc`` recorded; closes the file."""
        writer = self._writer
        if writer is None or self.run_id is None:
            return
        if self._tracer is not None:
            self._tracer.stop()
            from ..tracing.stream_writer import release_os_exit

            release_os_exit()
        ended_well = exc is None or (isinstance(exc, SystemExit) and exc.code in (0, None))
        try:
            if self._fault is not None:  # cut short: the run says so, and why
                end = {**self._fault, "ended": "finished" if ended_well else "failed"}
                if not ended_well:
                    end["exception"] = describe_exception(exc)
                writer.end_run(self.run_id, "truncated", end)
            elif ended_well:
                writer.end_run(self.run_id, "finished")
            else:
                writer.end_run(self.run_id, "failed", describe_exception(exc))
        except WriteFailed as failure:
            self._cut_short(failure)  # said once: the end could not be written either
        except Exception as err:  # noqa: BLE001
            self._warn(f"could not end run: {err}")
        finally:
            self._close(writer)

    def _close(self, writer: Any) -> None:
        """After the run's end was written (or could not be): close the file and let go of
        what capture held — nothing is captured after the end."""
        writer.close()
        self._writer = None
        self._frames.forget()

    def pause(self, pause: dict[str, Any]) -> bool:
        """End the run ``waiting`` (``pause["pause"] == "wait"``) or ``sleeping``, storing
        ``pause`` as the run's end (``capture/waits.py``), and close the file. Returns False
        when nothing was recording or the end could not be written (a warning says why)."""
        writer = self._writer
        if writer is None or self.run_id is None:
            return False
        if self._tracer is not None:
            self._tracer.stop()
            self._tracer = None
            from ..tracing.stream_writer import release_os_exit

            release_os_exit()
        status = "waiting" if pause.get("pause") == "wait" else "sleeping"
        try:
            if self._fault is not None:  # cut short: steps are missing, it cannot be resumed
                writer.end_run(self.run_id, "truncated", {**self._fault, "ended": status})
                return False
            writer.end_run(self.run_id, status, pause)
            return True
        except WriteFailed as failure:
            self._cut_short(failure)
            return False
        except Exception as err:  # noqa: BLE001
            self._warn(f"could not end the run {status}: {err}")
            return False
        finally:
            self._close(writer)

    def patch_marker(self, patch_id: str, frame: types.FrameType) -> bool:
        """Live ``patched(patch_id)``: journal the decision (a row named ``patched:ID``, no
        step) so that a replay of this run takes the patched branch too; True."""
        writer = self._writer
        if writer is None or self.run_id is None or not hasattr(writer, "add_effect"):
            return True  # nothing to keep it in (a traced run): the live answer
        task = self.lane()
        site = call_site(frame)
        with self.effect_lock:
            seq = self.effect_seq
            self.effect_seq += 1
            ordinal = self.effect_counts.get((site, task), 0)
            self.effect_counts[(site, task)] = ordinal + 1
        writer.add_effect(self.run_id, {
            "seq": seq, "step": writer.next_index(self.run_id) - 1, "site": site, "task": task,
            "ordinal": ordinal, "name": f"patched:{patch_id}", "args_hash": None,
            "outcome": "return", "value": {}}, {})
        return True

    def _cut_short(self, failure: WriteFailed) -> None:
        """A write failed: stop recording the run here and say so once, naming the file and
        the reason; ``finish`` then marks the run ``truncated`` where it still can."""
        if self._fault is not None:
            return
        writer = self._writer
        at = getattr(failure, "at_step", None)  # from the trace writer process
        try:
            if at is None and writer is not None:
                at = writer.next_index(self.run_id)
        except Exception:  # noqa: BLE001 - the index is a detail of the message
            pass
        self._fault = {"reason": failure.problem, "at_step": at}
        where = f"at step {at}" if at is not None else "here"
        self._say(f"{self.path}: recording stopped {where}: {failure.problem}; the steps after "
                  "it are not saved (the run is marked truncated where that can be written)")

    def _user_key(self):
        """The user key that signs this run, created on the first record (``ensure_key``);
        None (unsigned) when it is unusable or cannot be made — then one warning per process
        says why, and recording goes on."""
        choice = ensure_key()
        if choice.problem:
            warn_unsigned_once(choice.problem, self._say)
        return choice.key

    def _say(self, message: str) -> None:
        try:
            sys.stderr.write(f"snapstate: {message}\n")
        except Exception:  # noqa: BLE001 - stderr may be closed; there is nowhere else to say it
            pass

    @property
    def recording(self) -> bool:
        return self._writer is not None

    def quiet(self) -> None:
        """Say nothing more on stderr: a replay's outcome is being reported, and a step of
        another thread whose capture fails as the replay's writer stops is not news."""
        self._warned = True

    def _warn(self, message: str) -> None:
        if self._warned:
            return
        self._warned = True
        try:
            sys.stderr.write(f"snapstate: {self.path}: {message}\n")
        except Exception:  # noqa: BLE001 - stderr may be closed; there is nowhere else to say it
            pass


def _seal_entry(entry: dict[str, Any], blobs: dict[str, bytes], sealer: Any
                ) -> tuple[dict[str, Any], dict[str, bytes]]:
    """A workflow entry whose pickled arguments (``entry["args"]``) are sealed like every other
    payload of an encrypted run (the replay child opens them through the trust gate)."""
    args = entry.get("args")
    if not isinstance(args, dict) or args.get("b") not in blobs:
        return entry, blobs
    sealed = sealer.seal(blobs[args["b"]])
    key = content_hash(sealed).hex()
    rest = {k: v for k, v in blobs.items() if k != args["b"]}
    return {**entry, "args": {**args, "b": key, "x": sealer.key_id}}, {**rest, key: sealed}
