"""Runs and steps: the ``record`` block, ``checkpoint()``, ``@step`` and the active recorder.

One ``Recorder`` exists per ``record`` use (one run). While it is active, capture points in any
thread or asyncio task of the process append steps to it. Outside a ``record`` block every
capture point is a cheap no-op. Nothing here raises into the user's program: a capture failure
is recorded on the step (or, if even that fails, counted and reported once on stderr).
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
from .frames import FrameCapturer, StackCapture
from .address_layout import address_facts
from .hashseed import seed_facts
from .tasks import call_site, current_task_name, current_thread_name
from ..clocks import Clocks
from ..trust.keys import KeyFileError, ensure_key, warn_unsigned_once
from ..options import CaptureOptions, traced_options
from ..trust.signing import RunSigner
from ..store import task_column
from ..errors import WriteFailed
from ..store.locations import is_store_url
from ..store.processes import process_facts
from ..store.step_record import StepRecord
from ..store.writer import TimelineWriter
from ..store.hashing import content_hash
from ..values import capture_value
from ..values.exceptions import describe_exception
from ..values.payload import caught_warnings

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
#: by value (``CaptureOptions.bound_by_value``, ``tracing/bounded.reach``).
BOUNDED_VERSION = 1


def _recording() -> bool:
    return bool(_active)


class PreviewOnly:
    """Wraps a step's extra value that is stored as a preview only, never as a payload (an
    effect's arguments: they are compared by digest on replay, not loaded)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def active_recorder() -> Recorder | None:
    """Return the innermost active recorder, or None outside any ``record`` block."""
    return _active[-1] if _active else None


class Recorder:
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

    def keep(self) -> bool:
        """A held run (``held=True``) after its block: write it to the file now, whole, and
        wait until it is stored. True when the run is in the file (a run not held, or already
        written because it had to be, is there already); False when it could not be written.
        Never raises."""
        stream = self._stream
        if not self.held or stream is None:
            return self.run_id is not None
        return stream.release()

    def discard(self) -> None:
        """A held run after its block: forget it; nothing of it is written (a run that was
        written already — a checkpoint in it needed its index — stays in the file)."""
        if self.held and self._stream is not None:
            self._stream.drop()
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

    def _start_tracing(self) -> None:
        """Hand the run to a trace writer process and install the tracer (``trace`` mode)."""
        from ..tracing.include import IncludeRule
        from ..tracing.stream import Stream
        from ..tracing.stream_writer import StreamWriter, hold_os_exit
        from ..tracing.tracer import Tracer, _active as tracing

        if tracing:
            raise RuntimeError("another record block is already tracing")
        assert self.run_id is not None
        spool = None
        if self._writer is not None:
            if getattr(self._writer, "spool_path", None) is not None:
                spool = self._writer  # kept (locked) by the stream until the run has ended
            else:
                self._writer.close()
            self._writer = None
        from ..tracing.step_tally import StepTally

        stream = Stream(str(self.path), self.run_id, traced_options(self.options),
                        begin=self._begin_in_file if self.held else None, tally=StepTally,
                        spool=spool)
        try:
            stream.start()
        except BaseException:
            if spool is not None:  # checkpoints only: they go on into the spool
                spool.start_writer()
                self._writer = spool
            raise
        self._stream = stream
        self._writer = StreamWriter(self)
        tracer = Tracer(mode=self.trace or "calls", options=self.options, stream=stream,
                        rule=IncludeRule(self.include, self.exclude))
        self._tracer = tracer
        from .lent_captures import LentCaptures

        tracer.encoder.lent = lent = LentCaptures()  # one capture of a value for both
        self._frames.lend_with(lent)
        self._record_other_threads()
        tracer.start(self.root)
        hold_os_exit(stream)


    def _record_other_threads(self) -> None:
        """One step per thread already running: its stack, labelled ``not traced``."""
        me = threading.get_ident()
        names = {t.ident: t.name for t in threading.enumerate()}
        for ident, frame in list(sys._current_frames().items()):
            if ident == me or ident not in names or names[ident].startswith("snapstate-"):
                continue
            try:
                record = self.build_record("checkpoint", frame,
                                           f"thread {names[ident]}: not traced", None, None)
                record.thread = names[ident]
                record.task = None
                self._writer.append_step(self.run_id, record, numbered=False)
            except Exception as exc:  # noqa: BLE001
                self._warn(f"could not record thread {names[ident]}: {exc}")


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

    # -- capture ---------------------------------------------------------------------------
    def capture(self, kind: str, frame: types.FrameType | None, *, label: str | None = None,
                extra: dict[str, Any] | None = None, lineno: int | None = None,
                effect: dict[str, Any] | None = None) -> int | None:
        """Append one step of ``kind`` with the stack ending at ``frame``; return its index.

        ``extra`` values are captured with the step (checkpoint extras, return values). Never
        raises; returns None when nothing could be written. Re-entrant calls (capture code
        triggering capture) are ignored. ``effect`` is an effect-journal row (see
        ``effects.py``) written in the same transaction as the step.
        """
        if self._writer is None or self._fault is not None or getattr(self._reentry, "busy",
                                                                      False):
            return None
        self._last_raise_point = None
        self._reentry.busy = True
        tracer = self._tracer
        saved = None
        if tracer is not None:
            tracer.check_installed()
            saved = tracer.pause()  # user code run by capture (a __reduce__) is not a step
        try:
            return self._capture(kind, frame, label, extra, lineno, effect)
        except Exception as exc:  # noqa: BLE001 - a capture failure is recorded, never thrown
            # The step was begun and not written: what its capture cached names blobs the
            # file does not have (a later step reusing them would point at nothing).
            self._frames.forget()
            self.capture_errors += 1
            self._warn(f"capture failed at a {kind} step: {type(exc).__name__}: {exc}")
            return None
        except BaseException:  # Ctrl-C while capturing: the program goes on, or not
            self._frames.forget()
            raise
        finally:
            if tracer is not None:
                tracer.resume(saved)
            self._reentry.busy = False

    def _capture(self, kind: str, frame: types.FrameType | None, label: str | None,
                 extra: dict[str, Any] | None, lineno: int | None,
                 effect: dict[str, Any] | None = None) -> int | None:
        record = self.build_record(kind, frame, label, extra, lineno)
        writer = self._writer
        if writer is None or self.run_id is None:
            return None
        if effect is not None:
            effect = self.effect_row(effect, record)
        try:
            if self._stream is not None and kind != "checkpoint":
                # only checkpoint() hands its index to the program: a held run stays held
                index = writer.append_step(self.run_id, record, effect=effect, numbered=False)
            else:
                index = writer.append_step(self.run_id, record, effect=effect)
        except WriteFailed as failure:
            self._frames.forget()  # cached refs may name blobs that were rolled back
            self._cut_short(failure)
            return None
        offers, self._reentry.offers = getattr(self._reentry, "offers", None), None
        if offers and self._tracer is not None:  # the step's blobs are with the writer now
            self._tracer.encoder.take_offers(offers)
        return index

    def effect_row(self, effect: dict[str, Any], record: StepRecord) -> dict[str, Any]:
        """Complete an effect-journal row with the value refs captured on its step: the
        result (or exception) ref, plus the arguments' preview under ``"a"`` (``"ax"``: the key
        it is sealed with, in an encrypted run, whose argument digest is keyed too)."""
        row = dict(effect)  # "value" gets: the result ref, "a" args preview, "r" rng state
        ref = dict(record.extra.get("result") or record.extra.get("exception") or {})
        args_ref = record.extra.get("args")
        if args_ref:
            ref["a"] = args_ref.get("p")
            if args_ref.get("x"):
                ref["ax"] = args_ref["x"]
        sealer = self._frames.sealer
        if sealer is not None and row.get("args_hash"):
            row["args_hash"] = sealer.digest(row["args_hash"])
        by = row.pop("by", None)
        if by:
            ref["w"] = by  # who gave a wait's outcome, and when
        rng_after = row.pop("rng", None)
        if rng_after:
            key, data = rng_after
            record.blobs[key] = data
            ref["r"] = key
        row["value"] = ref
        return row

    def build_record(self, kind: str, frame: types.FrameType | None, label: str | None,
                     extra: dict[str, Any] | None, lineno: int | None,
                     frames: list[types.FrameType] | None = None) -> StepRecord:
        """Capture the stack ending at ``frame`` (and ``extra``) into a ``StepRecord``."""
        wall, mono = Clocks.time(), Clocks.monotonic()  # not the program's (``clocks.py``)
        if frames is None:
            frames = self._frames.walk(frame, self.root)
            if self._tracer is not None:
                # ``exec``'d code without a file — the ``<string>`` frames pytest-xdist's
                # workers run tests under — is never traced, so a replay's stacks lack it
                frames = [f for f in frames if f.f_code.co_filename != "<string>"]
        with caught_warnings() as said:  # warnings from pickling: capture errors, not output
            stack: StackCapture = self._frames.capture(frames, innermost_lineno=lineno)
            extra_refs = {}
            for name, value in (extra or {}).items():
                if isinstance(value, PreviewOnly):
                    captured = capture_value(value.value, name=name,
                                             options=self.options.values, payloads=False)
                    extra_refs[name] = self._frames.preview_ref(captured.preview, stack)
                else:
                    extra_refs[name] = self._frames.value_ref(value, name, stack)
        self._frames.end_record(stack)
        self._reentry.offers = stack.offers  # handed to the tracer once the step is written
        stack.errors.extend(f"warning while capturing: {text}" for text in said)
        thread = current_thread_name()
        n_changed = self._count_changes(thread, frames, stack.innermost_digests)
        record = StepRecord(
            kind=kind, label=label, wall=wall, mono=mono, thread=thread,
            task=task_column.join(current_task_name(), self.lane()),
            function=stack.function, filename=stack.filename,
            lineno=stack.lineno, depth=len(stack.frames), frames=stack.frames,
            extra=extra_refs, errors=stack.errors, n_changed=n_changed,
            blobs={k: v for k, v in stack.blobs.items()
                   if self._writer is None or not self._writer.has_blob(k)},
            manifests=stack.manifests, bases=stack.bases)
        if stack.errors:
            self.capture_errors += len(stack.errors)
        return record

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

    def lane(self) -> str:
        """The lineage steps and effects of the calling code are ordered in
        (``lineage.current()``: its task, pool call or thread, by who spawned it)."""
        return lineage.current()

    def capture_exception(self, exc: BaseException) -> None:
        """Append an ``exception`` step holding the stack and locals at the raise point."""
        tb = exc.__traceback__
        if tb is None:
            return
        while tb.tb_next is not None:
            tb = tb.tb_next
        raise_point = (type(exc), tb.tb_frame.f_code, tb.tb_lineno)
        if raise_point == self._last_raise_point:
            return  # already the last step: the same exception, propagating further
        self.capture("exception", tb.tb_frame, label=f"{type(exc).__name__}",
                     extra={"exception": exc}, lineno=tb.tb_lineno)
        self._last_raise_point = raise_point

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
