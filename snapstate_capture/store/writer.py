"""Appending runs, steps and blobs to a timeline.

``TimelineWriter`` is the only writer on the capture side: it keeps each run's hash chain and
signature, encodes blobs (deltas against recent versions: ``blob_writes.py``), and hands rows
to the store's write engine (``store.engine.WriteEngine``; the SQLite file's is
``store.sqlite.writing``). It is thread-safe (one lock around the engine) and commits each step
in its own transaction, so a killed recorder leaves every completed step in the store. The steps
it is handed are ``StepRecord``s (``step_record.py``).
"""

from __future__ import annotations

import os
import contextlib
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from ..clocks import Clocks
from ..errors import WriteFailed
from .blob_writes import BlobWrites
from .hashing import GENESIS, chain_hash
from . import sealing
from .leases import claim_continuation
from .processes import process_facts
from .sealing import RunState
from .locations import location_label, open_write_engine
from .step_record import StepRecord, _json_text, _step_row, chunk_chain_fields


class Unsigned:
    """The signer of a writer that signs nothing (``trust.signing.RunSigner``'s shape)."""

    key_id = None

    def sign(self, state: RunState, statement: bytes | None = None) -> None:
        return None

    def check(self, state: RunState, signature: object) -> bool:
        return False


UNSIGNED = Unsigned()

_RUN_HEADER = ("name", "started", "pid", "host", "proc_start", "entry", "env", "parent_run",
               "parent_step")
_EFFECT_COLUMNS = ("seq", "step", "site", "task", "ordinal", "name", "args_hash", "outcome",
                   "value")


class TimelineWriter(BlobWrites):
    """Writes runs into one timeline file (created if missing, appended to otherwise).

    Raises ``TimelineError`` from the constructor when the file cannot be opened for writing.
    Methods after that raise ``errors.WriteFailed`` when a write fails (a full disk, a file
    deleted or replaced meanwhile, an I/O error): nothing of that change is stored; the
    recorder stops the run there and marks it ``truncated``. Every change re-seals its run in the same transaction (``runs.seal``,
    ``store.sealing``); ``signer`` (``trust.signing.RunSigner``, or any object of its shape)
    signs the same statement; without one, runs are written sealed but unsigned.
    """

    def __init__(self, path: str | os.PathLike[str], *, signer: Any = None) -> None:
        self.path = location_label(path)
        self._signer = signer if signer is not None else UNSIGNED
        self.engine = open_write_engine(path)
        self._lock = threading.Lock()
        self._known: set[str] = set()
        self._pending: list[str] = []  # blobs queued in the open transaction
        #: Recently written inner bytes and their delta-chain depth, for deltas (bounded LRU).
        self._recent: OrderedDict[str, tuple[bytes, int]] = OrderedDict()
        self._recent_bytes = 0
        #: What each run's seal covers now (``sealing.RunState``), committed changes only.
        self._states: dict[str, RunState] = {}
        #: Runs attached whose stored seal or signature did not check: they are appended to,
        #: but never re-sealed or re-signed (that would launder whatever changed them).
        self._tainted: set[str] = set()
        #: The effect-journal ``seq`` numbers each run has (``_insert_effect``).
        self._effect_seqs: dict[str, set[int]] = {}
        self._effect_next: dict[str, int] = {}  # run id -> the seq its next journal row gets

    def begin_run(self, *, name: str, entry: dict[str, Any], env: dict[str, Any],
                  parent: tuple[str, int] | None = None,
                  blobs: dict[str, bytes] | None = None,
                  claim: tuple[str, str] | None = None, run_id: str | None = None,
                  facts: dict[str, Any] | None = None) -> str:
        """Create a run with status ``running`` and return its id (32 hex chars).

        ``blobs`` (hex key -> bytes) are written in the same transaction: what ``entry`` refers
        to (saved RNG states, a workflow function's pickled arguments). ``claim``:
        ``(run id, lease token)`` — the new run is that run's continuation, recorded in its lease
        in the same transaction; raises ``leases.LeaseLost`` (and creates nothing) unless the
        token still holds a live lease on a run not continued yet; the run's ``env`` then names
        the run it continues (``"continues"``), so readers tell it from the sealed header.
        ``run_id`` and ``facts`` (``process_facts()``: start time, pid, host, process start)
        are those of another process when it writes on a recorder's behalf (the spool writer);
        by default a new id and this process's facts.
        """
        run_id = run_id or uuid.uuid4().hex
        if claim is not None:
            env = {**env, "continues": claim[0]}
        header = dict(name=name, **(facts or process_facts()), entry=_json_text(entry),
                      env=_json_text(env), parent_run=parent[0] if parent else None,
                      parent_step=parent[1] if parent else None)
        with self._lock:
            with self._transaction(immediate=True) as engine:
                self._insert_blobs(blobs or {})
                seq = engine.next_run_seq()
                state = RunState(run_id, sealing.header_digest(run_id=run_id, **header),
                                 key_id=self._signer.key_id, seq=seq)
                seal, signature = self._seal(run_id, state)
                engine.insert_run(run_id, seq, header, signature, state.key_id, seal)
                if claim is not None:
                    claim_continuation(engine, claim[0], claim[1], run_id, self.path)
            self._states[run_id] = state
        return run_id

    def _seal(self, run_id: str, state: RunState) -> tuple[bytes | None, bytes | None]:
        """``(seal, signature)`` of ``state`` to store with the change; ``(None, None)`` for a
        tainted run, whose stored ones stay (and no seal for a run from before seals)."""
        if run_id in self._tainted:
            return None, None
        if state.version < 2 and state.key_id is None:
            return None, None
        statement = sealing.run_statement(state)  # made once: sealed and signed
        seal = sealing.seal_of(state, statement) if state.version >= 2 else None
        return seal, self._signer.sign(state, statement) if state.key_id is not None else None

    @contextlib.contextmanager
    def _transaction(self, *, immediate: bool = False) -> Iterator[Any]:
        """One engine transaction (call with ``self._lock`` held): committed at the end of the
        block, rolled back on any exception — and then the blobs ``_insert_blobs`` queued in it
        are forgotten, so nothing later skips or deltas against a blob that never got stored."""
        self._pending = []
        try:
            self.engine.check_place()
            with self.engine.transaction(immediate=immediate) as engine:
                yield engine
        except BaseException as exc:  # noqa: BLE001 - undo the bookkeeping, then re-raise
            self._known.difference_update(self._pending)
            for key in self._pending:
                old = self._recent.pop(key, None)
                if old is not None:
                    self._recent_bytes -= len(old[0])
            if isinstance(exc, self.engine.write_errors):
                raise WriteFailed(self.path, self.engine.describe_failure(exc)) from exc
            raise
        finally:
            self._pending = []

    def append_step(self, run_id: str, record: StepRecord,
                    effect: dict[str, Any] | None = None) -> int:
        """Write ``record`` (and its blobs) as the run's next step; return its index.

        ``effect``: an effect-journal row (see ``add_effect``) written in the same transaction,
        with its ``step`` set to this step's index, so a killed recorder never leaves an effect
        step without its journal entry or the reverse.
        """
        with self._lock:
            state = self._states[run_id]
            index = state.steps
            digest = chain_hash(state.head, record.chain_fields(state.version))
            state = state.with_steps(index + 1, digest)
            with self._transaction() as engine:
                self._insert_blobs(record.blobs, record.manifests, record.bases)
                engine.insert_steps([_step_row(run_id, index, record, digest)])
                if effect is not None:
                    state = self._insert_effect(run_id, {**effect, "step": index}, state)
                self._store_state(run_id, state)
            self._states[run_id] = state
            return index

    def _store_state(self, run_id: str, state: RunState) -> None:
        """Inside an open transaction: the run's step count, chain head, seal and signature."""
        seal, signature = self._seal(run_id, state)
        self.engine.set_chain(run_id, state.steps, state.head if state.steps else None,
                              signature, seal)

    def attach_run(self, run_id: str) -> bool:
        """Continue appending to an existing run (its seal state is rebuilt from its rows);
        used by the trace writer process. Raises ``KeyError`` when the run is not in the store.

        Returns False when the run's stored seal or signature does not match its rows as they
        stand (altered in between, or signed by a key this writer does not hold): steps are
        still appended, but the run is never re-sealed or re-signed, so it stays reported as
        altered rather than laundered.
        """
        with self._lock:
            row = self.engine.resume_row(run_id)
            if row is None:
                raise KeyError(run_id)
            count, head, signature, key_id = row[:4]
            seq, seal, status, ended, error = row[13:18]
            version = sealing.VERSION if seal is not None else 1
            try:
                # An ended run's seal covers its end (as ``trust.verify`` reads it): a state
                # without it would take every finished run for an altered one.
                end = None if status == "running" else sealing.end_fields(
                    status=status, ended=ended, error=error)
                state = RunState(
                    run_id, sealing.header_digest(run_id=run_id,
                                                  **dict(zip(_RUN_HEADER, row[4:13]))),
                    key_id=key_id if version >= 2 else None, seq=seq, steps=int(count),
                    head=bytes(head) if head else GENESIS, end=end, version=version)
                for effect in self.engine.effect_rows(run_id):
                    state = state.with_effect(sealing.effect_fields(
                        **dict(zip(_EFFECT_COLUMNS, effect))))
                    self._effect_seqs.setdefault(run_id, set()).add(effect[0])
                    self._effect_next[run_id] = max(self._effect_next.get(run_id, 0),
                                                    int(effect[0]) + 1)
                intact = seal == sealing.seal_of(state) if version >= 2 else True
            except (TypeError, ValueError):
                raise KeyError(run_id) from None
            if key_id is not None:
                intact = intact and key_id == self._signer.key_id and \
                    self._signer.check(state, signature)
                if version < 2:  # a version-1 run is signed over a statement without the key
                    state = replace(state, key_id=key_id)
            self._states[run_id] = state
            if not intact:
                self._tainted.add(run_id)
            return intact

    def set_signature(self, run_id: str, *, signature: bytes, key_id: str, steps: int,
                      head: bytes | None, status: str, effects: int, seal: bytes | None = None,
                      expected_seal: bytes | None = None) -> bool:
        """Store ``signature`` (made by ``key_id``; with the run's new ``seal``, which covers
        the key id) on an existing run, only if the run still has the ``steps``, chain ``head``,
        ``status``, number of ``effects`` and seal (``expected_seal``) that were verified and
        signed (``snapstate sign``). Returns False when the run changed meanwhile (nothing is
        written)."""
        with self._lock:
            with self._transaction(immediate=True) as engine:
                row = engine.signed_state(run_id)
                if row is None or (row[0], bytes(row[1] or GENESIS), row[2], row[3], row[4]) \
                        != (steps, bytes(head or GENESIS), status, effects, expected_seal):
                    return False
                engine.set_run_signature(run_id, signature, key_id, seal)
        return True

    def next_index(self, run_id: str) -> int:
        """The index the run's next step will get."""
        with self._lock:
            return self._states[run_id].steps

    def append_chunk(self, run_id: str, count: int, data: bytes,
                     blob_items: dict[str, bytes], *,
                     manifests: set[str] | frozenset = frozenset(),
                     bases: dict[str, str] | None = None) -> int:
        """Write ``count`` traced steps encoded as one chunk (``store.chunks``) and the blobs
        they refer to, in one transaction; return the first step's index. ``manifests`` and
        ``bases``: as in ``StepRecord`` (a chunked value's payload and preview pieces).

        The chain advances once per chunk over ``{"chunk": hash(data), "first", "count"}``
        (see ``schema`` version 2)."""
        with self._lock:
            state = self._states[run_id]
            first = state.steps
            digest = chain_hash(state.head, chunk_chain_fields(data, first, count,
                                                               version=state.version))
            state = state.with_steps(first + count, digest)
            with self._transaction() as engine:
                self._insert_blobs(blob_items, manifests, bases)
                engine.insert_chunk(run_id, first, count, data, digest)
                self._store_state(run_id, state)
            self._states[run_id] = state
            return first

    def append_steps(self, run_id: str, records: list[StepRecord]) -> int:
        """Write ``records`` as the run's next steps in one transaction; return the last index.

        The recorder writes one step per transaction (crash safety: each completed step is
        committed); this is for bulk imports (``export``, benchmark files). The run's chain head
        is signed once, after the last record.
        """
        with self._lock:
            state = self._states[run_id]
            index, previous = state.steps, state.head
            rows = []
            with self._transaction() as engine:
                for record in records:
                    digest = chain_hash(previous, record.chain_fields(state.version))
                    self._insert_blobs(record.blobs, record.manifests, record.bases)
                    rows.append(_step_row(run_id, index, record, digest))
                    index, previous = index + 1, digest
                engine.insert_steps(rows)
                state = state.with_steps(index, previous)
                self._store_state(run_id, state)
            self._states[run_id] = state
            return index - 1

    def append_batch(self, run_id: str,
                     items: list[tuple[StepRecord, dict[str, Any] | None]]) -> int:
        """Write ``items`` — ``(record, effect row or None)`` as ``append_step`` takes them —
        as the run's next steps in one transaction; return the last index. The spool writer
        stores what a recorder spooled this way: all of a batch lands or none does."""
        with self._lock:
            state = self._states[run_id]
            index = state.steps
            rows: list[tuple] = []
            blob_rows: list[tuple] = []
            with self._transaction() as engine:
                for record, effect in items:
                    self._insert_blobs(record.blobs, record.manifests, record.bases,
                                       into=blob_rows)
                    digest = chain_hash(state.head, record.chain_fields(state.version))
                    rows.append(_step_row(run_id, index, record, digest))
                    state = state.with_steps(index + 1, digest)
                    if effect is not None:
                        state = self._insert_effect(run_id, {**effect, "step": index}, state)
                    index += 1
                # One statement per table, blobs in key order (concurrent writers inserting
                # the same blobs take their row locks in one order: no deadlock).
                engine.insert_blobs(sorted(blob_rows))
                engine.insert_steps(rows)
                self._store_state(run_id, state)
            self._states[run_id] = state
            return index - 1

    def journal_size(self, run_id: str) -> int:
        """How many effect-journal rows the run has (as this writer knows them)."""
        with self._lock:
            return len(self._effect_seqs.get(run_id, ()))

    def add_effect(self, run_id: str, row: dict[str, Any], blob_items: dict[str, bytes]) -> None:
        """Append one entry to the run's effect journal (see schema ``effects``)."""
        with self._lock:
            with self._transaction():
                self._insert_blobs(blob_items)
                state = self._insert_effect(run_id, row, self._states[run_id])
                self._store_state(run_id, state)
            self._states[run_id] = state

    def _insert_effect(self, run_id: str, row: dict[str, Any], state: RunState) -> RunState:
        """Insert one journal row inside the caller's transaction; return ``state`` with it
        (the caller stores it with ``_store_state`` and keeps it once committed)."""
        used = self._effect_seqs.setdefault(run_id, set())
        # The journal is numbered here, in the order rows are written — the order the seal
        # chains them in, and the order verify reads them back (by seq). The caller's number,
        # taken when the call began, can be out of that order: two tools of one model turn
        # in a thread pool end in either order (the LangGraph example failed verify about one
        # run in twelve), and a call in flight when a replay went live was numbered among the
        # served calls before the fork's journal was copied.
        seq = self._effect_next.get(run_id, 0)
        fields = sealing.effect_fields(
            seq=seq, step=row.get("step"), site=row["site"], task=row.get("task"),
            ordinal=row["ordinal"], name=row["name"], args_hash=row.get("args_hash"),
            outcome=row["outcome"], value=_json_text(row.get("value")))
        self.engine.insert_effect(run_id, fields)
        self._effect_next[run_id] = seq + 1  # a row refused by the database takes no number
        used.add(seq)
        return state.with_effect(fields)

    def end_run(self, run_id: str, status: str, error: dict[str, Any] | None = None) -> None:
        """Set the run's final ``status`` (``finished``/``failed``/``truncated``…) and end
        time, re-sealed in the same statement."""
        ended, error_text = Clocks.time(), _json_text(error) if error else None
        with self._lock:
            state = self._states[run_id].with_end(status=status, ended=ended, error=error_text)
            seal, signature = self._seal(run_id, state)
            self.engine.check_place()
            try:
                self.engine.finish_run(run_id, status, ended, error_text, signature, seal)
            except self.engine.write_errors as exc:
                raise WriteFailed(self.path, self.engine.describe_failure(exc)) from exc
            self._states[run_id] = state

    def _worth_compacting(self) -> bool:
        """Whether closing would compact the file (``store.sqlite.writing``)."""
        return self.engine._worth_compacting()

    def close(self) -> None:
        """Finish writing: the engine folds its journal and compacts a small file; safe to
        call twice (``store.sqlite.writing.SQLiteWriteEngine.close``)."""
        with self._lock:
            self.engine.close()
