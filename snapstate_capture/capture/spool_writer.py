"""The spool writer process: stores what a recorder spools (``store.spool``) into its database
store, catching up whenever the store is reachable.

Started by ``capture.spooled.SpoolingWriter`` as ``python -m snapstate_capture.capture.spool_writer
SPOOL`` in its own session. Its stdin is the recorder's liveness pipe (end of input: the
recorder is gone, whatever it spooled is stored, then the process ends; a line ``end JSON``
on it is the run's end when the spool could not take it — a full disk — stored after
everything spooled: a run cut short so was left ``running``, taken for crashed, and its resume
ran again the effects it had run unrecorded, helper-40 2 of 2); on stdout it says
``stored`` once the run's end is in the store, or ``cut STEP REASON`` when the store refused a
change for good (and ``waiting REASON`` once, when the store is first out of reach). Consecutive steps are stored in one transaction per batch (the spool, not the
transaction, is what keeps a killed recorder's steps).

A write that fails for a reason worth trying again — the database restarting, a dropped
connection, a serialization failure or deadlock PostgreSQL reports — is retried with backoff
on a new connection; the run's state is read back from the store first, so what was committed
before the failure is never written twice, and steps keep their order, indexes and hash chain.
After ``PATIENCE_ENV`` seconds without progress the process ends and leaves the spool; the next
spool writer for the same store takes such orphans (spools no process holds) and stores them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import StoreRefused, StoreUnreachable
from ..store.spool import SpoolReader, spool_dir
from ..store.step_record import StepRecord
from ..store.writer import TimelineWriter

#: Seconds without progress after which the writer leaves the spool for a later writer.
PATIENCE_ENV = "SNAPSTATE_SPOOL_PATIENCE"
DEFAULT_PATIENCE = 3600.0
#: Steps (and blob bytes) stored in one transaction at most.
BATCH_STEPS = 500
BATCH_BYTES = 8 * 1024 * 1024
#: Seconds between looks at the spool while nothing new is in it.
IDLE_POLL = 0.02
#: Seconds between transactions while a live recorder is followed (steps gather meanwhile);
#: ``SNAPSTATE_SPOOL_LINGER`` sets another.
try:
    LINGER = max(float(os.environ.get("SNAPSTATE_SPOOL_LINGER", "0.1")), 0.0)
except ValueError:
    LINGER = 0.1
_FIRST_DELAY, _MAX_DELAY = 0.05, 2.0


class GaveUp(Exception):
    """The store refused a change for good (``permanent``) or stayed out of reach too long."""

    def __init__(self, reason: str, *, permanent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


def transient(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is worth trying again on a new connection: the
    store out of reach, or a PostgreSQL operational error (connection lost, server shutting
    down or starting, serialization failure, deadlock, lock not available)."""
    try:
        import psycopg
        operational: tuple[type[BaseException], ...] = (psycopg.OperationalError,
                                                        psycopg.InterfaceError)
    except ImportError:
        operational = ()
    if isinstance(exc, StoreRefused):
        return False  # the server answered and said no: a retry gets the same answer
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, StoreUnreachable) or isinstance(exc, operational):
            return True
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        seen += 1
    return False


class StoreSink:
    """Applies one spool's changes to the store at ``url`` for run ``run_id``, retrying what is
    worth retrying. Positions count the spool's steps and effect-journal rows; a change whose
    position the store already has was committed before a failure and is skipped."""

    def __init__(self, url: str, run_id: str, *, patience: float, say: Any = None) -> None:
        self.url, self.run_id, self.patience = url, run_id, patience
        self.say = say
        self._said_waiting = False
        self.writer: TimelineWriter | None = None
        self.stored_steps = self.stored_effects = 0  # what the store has (read back)
        self.exists = False
        self.step_pos = self.effect_pos = 0  # the spool's changes handled so far
        self.ended = False
        self._progress = time.monotonic()

    def apply(self, changes: list[Any]) -> None:
        """Store ``changes`` (decoded spool frames) in order; raises ``GaveUp``."""
        batch: list[tuple[StepRecord, Any]] = []
        size = 0
        for change in changes:
            if change[0] == "step":
                record = StepRecord(**change[1])
                batch.append((record, change[2]))
                size += sum(len(b) for b in record.blobs.values())
                if len(batch) >= BATCH_STEPS or size >= BATCH_BYTES:
                    self._steps(batch)
                    batch, size = [], 0
                continue
            if batch:
                self._steps(batch)
                batch, size = [], 0
            if change[0] == "begin":
                self._begin(change[1])
            elif change[0] == "effect":
                self._effect(change[1], change[2])
            elif change[0] == "chunk":
                self._chunk(change[1], change[2], change[3], *change[4:6])
            elif change[0] == "end":
                self._end(change[1], change[2])
        if batch:
            self._steps(batch)

    # -- each kind of change ----------------------------------------------------------------
    def _begin(self, fields: dict[str, Any]) -> None:
        def work(writer: TimelineWriter) -> None:
            if not self.exists:
                parent = fields.get("parent")
                writer.begin_run(name=fields["name"], entry=fields["entry"], env=fields["env"],
                                 parent=tuple(parent) if parent else None,
                                 blobs=fields.get("blobs"), run_id=self.run_id,
                                 facts=fields.get("facts"))
                self.exists = True
        self._with_store(work)

    def _steps(self, batch: list[tuple[StepRecord, Any]]) -> None:
        first = self.step_pos
        effects = sum(1 for _, effect in batch if effect is not None)

        def work(writer: TimelineWriter) -> None:
            todo = batch[max(self.stored_steps - first, 0):]
            if todo:
                writer.append_batch(self.run_id, todo)
            self.stored_steps = max(self.stored_steps, first + len(batch))
        self._with_store(work)
        self.step_pos += len(batch)
        self.effect_pos += effects
        self.stored_effects = max(self.stored_effects, self.effect_pos)

    def _chunk(self, count: int, data: bytes, blobs: dict[str, bytes],
               manifests: Any = (), bases: dict[str, str] | None = None) -> None:
        first = self.step_pos

        def work(writer: TimelineWriter) -> None:
            if self.stored_steps <= first:  # (a chunk is stored whole or not at all)
                writer.append_chunk(self.run_id, count, data, dict(sorted(blobs.items())),
                                    manifests=set(manifests), bases=bases)
            self.stored_steps = max(self.stored_steps, first + count)
        self._with_store(work)
        self.step_pos += count

    def _effect(self, row: dict[str, Any], blobs: dict[str, bytes]) -> None:
        position = self.effect_pos

        def work(writer: TimelineWriter) -> None:
            if self.stored_effects <= position:
                writer.add_effect(self.run_id, row, blobs)
                self.stored_effects = position + 1
        self._with_store(work)
        self.effect_pos += 1

    def _end(self, status: str, error: str | None) -> None:
        import json

        def work(writer: TimelineWriter) -> None:
            # An end committed before its acknowledgement was lost is not written again (a
            # second end would change the end time under the first end's seal).
            stored = writer.engine.signed_state(self.run_id) if self.exists else None
            if stored is not None and stored[2] == "running":
                writer.end_run(self.run_id, status, json.loads(error) if error else None)
        self._with_store(work)
        self.ended = True

    # -- the connection ---------------------------------------------------------------------
    def _with_store(self, work: Any) -> None:
        """Run ``work(writer)`` until it succeeds: on a failure worth retrying, drop the
        connection, wait (backing off), reconnect and read the run's state back."""
        delay = _FIRST_DELAY
        while True:
            try:
                work(self._connected())
                self._progress = time.monotonic()
                return
            except Exception as exc:  # noqa: BLE001 - sorted below: retried or given up
                _debug(f"run {self.run_id}: {type(exc).__name__}: {_words(exc)}"
                       f" (step {self.step_pos}, stored {self.stored_steps})")
                self._drop()
                if not transient(exc):
                    raise GaveUp(_words(exc), permanent=True) from exc
                if time.monotonic() - self._progress > self.patience:
                    raise GaveUp(_words(exc), permanent=False) from exc
                if self.say is not None and not self._said_waiting:
                    self._said_waiting = True  # once: the recorder names it if it must leave
                    self.say(f"waiting {_words(exc)}")
            time.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)

    def _connected(self) -> TimelineWriter:
        if self.writer is None:
            writer = TimelineWriter(self.url, signer=_signer())
            try:
                intact = writer.attach_run(self.run_id)
                self.exists = True
                self.stored_steps = writer.next_index(self.run_id)
                self.stored_effects = writer.journal_size(self.run_id)
                _debug(f"run {self.run_id}: attached at step {self.stored_steps}"
                       f"{'' if intact else ', its seal or signature does not check'}")
            except KeyError:
                self.exists = False
                self.stored_steps = self.stored_effects = 0
            self.writer = writer
        return self.writer

    def _drop(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - a broken connection closes as it can
                pass

    def close(self) -> None:
        self._drop()

    def cut_short(self, reason: str) -> None:
        """The store refused a change for good: mark the run ``truncated`` there if it can
        still be written (best effort)."""
        try:
            writer = self._connected()
            stored = writer.engine.signed_state(self.run_id) if self.exists else None
            if stored is not None and stored[2] == "running":  # an ended run keeps its end
                writer.end_run(self.run_id, "truncated",
                               {"reason": reason, "at_step": self.stored_steps,
                                "ended": "unknown"})
        except Exception:  # noqa: BLE001 - the cut is said on stdout either way
            pass


def _debug(line: str) -> None:
    """Say ``line`` on stderr when ``SNAPSTATE_DEBUG=1`` (the writer's stderr is the
    recorder's then; otherwise it goes nowhere)."""
    if os.environ.get("SNAPSTATE_DEBUG") == "1":
        try:
            sys.stderr.write(f"snapstate spool writer {os.getpid()}: {line}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


def _words(exc: BaseException) -> str:
    text = getattr(exc, "problem", None) or str(exc) or type(exc).__name__
    return (text.strip().splitlines() or [type(exc).__name__])[0]


def _signer() -> Any:
    """The user's run signer (the recorder signs with the same key), else unsigned."""
    from ..trust.keys import find_key
    from ..trust.signing import RunSigner

    try:
        return RunSigner(find_key())
    except Exception:  # noqa: BLE001 - an unusable key: the recorder already warned
        return RunSigner(None)


def _patience() -> float:
    try:
        return float(os.environ.get(PATIENCE_ENV, DEFAULT_PATIENCE))
    except ValueError:
        return DEFAULT_PATIENCE


def drain(path: Path, *, liveness: Any = None, say: Any = None) -> tuple[str, str | None]:
    """Store everything spooled in ``path``. With ``liveness`` (the recorder's pipe) the spool
    is followed until the run ends or the recorder is gone; without, only what it holds now
    (an orphan). Returns ``(outcome, url)``: ``"stored"`` (the spool is deleted), ``"cut"``,
    ``"waiting"`` (left for a later writer) or ``"busy"`` (another process holds it)."""
    try:
        reader = SpoolReader(path)
    except (OSError, ValueError):
        return "busy", None
    # The recorder's own writer waits its turn: between the recorder closing its spool and
    # this process locking it, another store's writer may have taken it for an orphan.
    mode = fcntl.LOCK_SH if liveness is not None else fcntl.LOCK_EX | fcntl.LOCK_NB
    try:
        fcntl.flock(reader._handle.fileno(), mode)
    except OSError:
        reader.close()
        _debug(f"{path.name}: busy (another process holds it)")
        return "busy", None
    if liveness is None and not _still_named(path, reader):
        # Opened before the writer that held it stored it and deleted it: nothing to take.
        reader.close()
        _debug(f"{path.name}: stored by another process meanwhile")
        return "busy", None
    url, run_id = reader.header
    _debug(f"{path.name}: storing{' (an orphan)' if liveness is None else ''}")
    sink = StoreSink(url, run_id, patience=_patience(), say=say)
    alive = liveness is not None
    said = bytearray()  # what the recorder wrote on the pipe (``end JSON`` lines)
    try:
        while True:
            changes = reader.read(limit=4 * BATCH_STEPS)
            if changes:
                began = time.monotonic()
                sink.apply(changes)
                if sink.ended:
                    break
                rest = LINGER - (time.monotonic() - began)
                if alive and rest > 0 and len(changes) < BATCH_STEPS:
                    # Following a live recorder: at most one transaction per LINGER, its next
                    # steps gathering meanwhile (a transaction costs this process more than
                    # its steps do); its end — the pipe closing — cuts the wait short.
                    ready, _, _ = select.select([liveness], [], [], rest)
                    if ready:
                        alive = _listen(liveness, said)
                continue
            if not alive:
                break
            ready, _, _ = select.select([liveness], [], [], IDLE_POLL)
            if ready:  # at its end, the recorder is gone: one more look takes what it wrote
                alive = _listen(liveness, said)
        if not sink.ended:
            end = _piped_end(said)
            if end is not None:
                sink.apply([end])
    except GaveUp as failure:
        sink.close()
        if not failure.permanent:
            reader.close()
            return "waiting", url
        sink.cut_short(failure.reason)
        sink.close()
        if say is not None:
            say(f"cut {sink.stored_steps} {failure.reason}")
        with contextlib.suppress(OSError):  # gone: another process cut it already
            path.rename(path.with_suffix(".failed"))
        reader.close()
        return "cut", url
    sink.close()
    if sink.ended and say is not None:
        say("stored")
    path.unlink(missing_ok=True)
    reader.close()
    return "stored", url


def _listen(liveness: Any, said: bytearray) -> bool:
    """Read what the recorder wrote on its pipe into ``said``; False at its end (gone)."""
    data = os.read(liveness.fileno(), 4096)
    said.extend(data)
    return bool(data)


def _piped_end(said: bytearray) -> tuple[str, str, str | None] | None:
    """The spool frame of the run's end the recorder sent on its pipe (``end JSON``:
    ``[status, error JSON or null]``), or None."""
    import json

    for line in bytes(said).splitlines():
        if line.startswith(b"end "):
            try:
                status, error = json.loads(line[4:])
            except (ValueError, TypeError):
                continue
            if isinstance(status, str) and (error is None or isinstance(error, str)):
                return ("end", status, error)
    return None


def _still_named(path: Path, reader: SpoolReader) -> bool:
    """Whether ``path`` still names the file ``reader`` has open (not deleted or replaced)."""
    try:
        named, held = os.stat(path), os.fstat(reader._handle.fileno())
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def take_orphans(url: str, skip: Path) -> None:
    """Store the spools for ``url`` that no process holds (their recorder and writer died)."""
    try:
        candidates = sorted(spool_dir().glob("*.spool"))
    except OSError:
        return
    for path in candidates:
        if path == skip:
            continue
        try:
            with open(path, "rb") as handle:
                head = handle.read(4096)
        except OSError:
            continue
        if url.encode() not in head:
            continue
        outcome, _ = drain(path)
        if outcome == "waiting":
            return  # the store is out of reach again: later


def _say(line: str) -> None:
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass  # the recorder stopped listening: it is not waiting for us


def main(argv: list[str]) -> int:
    """Serve one spool: ``argv`` = ``[SPOOL]``. Returns the exit code (0 stored, 3 cut or
    left waiting)."""
    path = Path(argv[0])
    outcome, url = drain(path, liveness=sys.stdin.buffer, say=_say)
    if outcome == "stored" and url is not None:
        take_orphans(url, path)
    return 0 if outcome in ("stored", "busy") else 3


if __name__ == "__main__":
    os.environ["SNAPSTATE_DISABLE"] = "1"
    raise SystemExit(main(sys.argv[1:]))
