"""Appending runs, steps and blobs to a timeline.

``TimelineWriter`` is the only writer on the capture side: it keeps each run's hash chain and
signature, encodes blobs (deltas against recent versions), and hands rows to the store's write
engine (``store.engine.WriteEngine``; the SQLite file's is ``store.sqlite.writing``). It is
thread-safe (one lock around the engine) and commits each step in its own transaction, so a
killed recorder leaves every completed step in the store.
"""

from __future__ import annotations

import json
import os
import socket
import contextlib
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .hashing import GENESIS, chain_hash, content_hash
from . import blobs
from .leases import claim_continuation
from .locations import location_label, open_write_engine


#: Bytes of recently written blobs kept as delta bases, and the largest blob kept.
RECENT_LIMIT = 32 * 1024 * 1024
RECENT_MAX_BLOB = 4 * 1024 * 1024


@dataclass
class StepRecord:
    """One step as the recorder hands it to the writer.

    ``frames`` holds frame-record hashes (hex), outermost first; ``extra`` maps names to value
    refs (see ``frames.value_ref``); ``errors`` lists capture-error texts; ``blobs`` maps hex
    hashes to raw bytes that must be in the file before the step is (written in the same
    transaction, skipped when already present). ``manifests`` names the keys in ``blobs`` that are
    manifests (see ``blobs.py``); ``bases`` maps a key to the key of a previous version of the same
    thing, which the writer may store it as a delta against (docs/storage.md).
    """

    kind: str
    label: str | None
    wall: float
    mono: float
    thread: str
    task: str | None
    function: str | None
    filename: str | None
    lineno: int | None
    depth: int
    frames: list[str]
    extra: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    n_changed: int = 0
    blobs: dict[str, bytes] = field(default_factory=dict)
    manifests: set[str] = field(default_factory=set)
    bases: dict[str, str] = field(default_factory=dict)

    def chain_fields(self) -> dict[str, Any]:
        """The fields covered by the step hash chain (everything but derived columns)."""
        return chain_fields(self.kind, self.label, self.wall, self.mono, self.thread, self.task,
                            self.frames, self.extra, self.errors)


def chain_fields(kind: str, label: str | None, wall: float, mono: float, thread: str,
                 task: str | None, frames: list[str], extra: dict[str, Any] | None,
                 errors: list[str] | None) -> dict[str, Any]:
    """Return the dict hashed into the chain for one step; the reader rebuilds it to verify."""
    return {"kind": kind, "label": label, "wall": repr(wall), "mono": repr(mono),
            "thread": thread, "task": task, "frames": frames, "extra": extra or {},
            "errors": errors or []}


def chunk_chain_fields(data: bytes, first: int, count: int) -> dict[str, Any]:
    """Return the dict hashed into the chain for one trace chunk (see ``append_chunk``)."""
    return {"chunk": content_hash(data).hex(), "first": first, "count": count}
def _step_row(run_id: str, index: int, record: StepRecord, digest: bytes) -> tuple:
    return (run_id, index, record.kind, record.label, record.wall, record.mono, record.thread,
            record.task, record.function, record.filename, record.lineno, record.depth,
            json.dumps(record.frames), json.dumps(record.extra) if record.extra else None,
            json.dumps(record.errors) if record.errors else None, record.n_changed, digest)


def process_start_marker(pid: int) -> str | None:
    """Return a string that identifies process ``pid``'s start (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


class _NoSignature:
    """What an unsigned change stages: no signature, no key, nothing to commit."""

    signature = None
    key_id = None

    def commit(self) -> None:
        """Nothing to do: the run is not signed."""


class Unsigned:
    """The signer of a writer that signs nothing (``trust.signing.RunSigner``'s shape)."""

    _NONE = _NoSignature()
    key_id = None

    def begin(self, run_id: str, **header: Any) -> _NoSignature:
        return self._NONE

    def step(self, run_id: str, count: int, head: bytes) -> _NoSignature:
        return self._NONE

    def effect(self, run_id: str, **fields: Any) -> _NoSignature:
        return self._NONE

    def end(self, run_id: str, **fields: Any) -> _NoSignature:
        return self._NONE

    def resume(self, run_id: str, **state: Any) -> bool:
        return False


UNSIGNED = Unsigned()


class TimelineWriter:
    """Writes runs into one timeline file (created if missing, appended to otherwise).

    Raises ``TimelineError`` from the constructor when the file cannot be opened for writing.
    Methods after that raise the engine's I/O errors (``sqlite3.Error``); the recorder catches
    these.
    ``signer`` (``trust.signing.RunSigner``, or any object of its shape) re-signs each run in
    the transaction of every change; without one, runs are written unsigned.
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
        self._chain: dict[str, tuple[int, bytes]] = {}

    def begin_run(self, *, name: str, entry: dict[str, Any], env: dict[str, Any],
                  parent: tuple[str, int] | None = None,
                  blobs: dict[str, bytes] | None = None,
                  claim: tuple[str, str] | None = None) -> str:
        """Create a run with status ``running`` and return its id (32 hex chars).

        ``blobs`` (hex key -> bytes) are written in the same transaction: what ``entry`` refers
        to (saved RNG states, a workflow function's pickled arguments). ``claim``:
        ``(run id, lease token)`` — the new run is that run's continuation, recorded in its lease
        in the same transaction; raises ``leases.LeaseLost`` (and creates nothing) unless the
        token still holds a live lease on a run not continued yet.
        """
        run_id = uuid.uuid4().hex
        pid = os.getpid()
        header = dict(name=name, started=time.time(), pid=pid, host=socket.gethostname(),
                      proc_start=process_start_marker(pid), entry=json.dumps(entry),
                      env=json.dumps(env), parent_run=parent[0] if parent else None,
                      parent_step=parent[1] if parent else None)
        with self._lock:
            with self._transaction(immediate=True) as engine:
                self._insert_blobs(blobs or {})
                seq = engine.next_run_seq()
                signed = self._signer.begin(run_id, **header)
                engine.insert_run(run_id, seq, header, signed.signature, signed.key_id)
                if claim is not None:
                    claim_continuation(engine, claim[0], claim[1], run_id, self.path)
            signed.commit()
            self._chain[run_id] = (0, GENESIS)
        return run_id

    def has_blob(self, key: str) -> bool:
        """True when blob ``key`` (hex) was written by this writer already (cheap, in memory)."""
        return key in self._known

    @contextlib.contextmanager
    def _transaction(self, *, immediate: bool = False) -> Iterator[Any]:
        """One engine transaction (call with ``self._lock`` held): committed at the end of the
        block, rolled back on any exception — and then the blobs ``_insert_blobs`` queued in it
        are forgotten, so nothing later skips or deltas against a blob that never got stored."""
        self._pending = []
        try:
            with self.engine.transaction(immediate=immediate) as engine:
                yield engine
        except BaseException:  # noqa: BLE001 - undo the bookkeeping, then re-raise
            self._known.difference_update(self._pending)
            for key in self._pending:
                old = self._recent.pop(key, None)
                if old is not None:
                    self._recent_bytes -= len(old[0])
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
            index, previous = self._chain[run_id]
            digest = chain_hash(previous, record.chain_fields())
            with self._transaction() as engine:
                self._insert_blobs(record.blobs, record.manifests, record.bases)
                engine.insert_steps([_step_row(run_id, index, record, digest)])
                signed = self._advance_chain(run_id, index + 1, digest)
                if effect is not None:
                    signed = self._insert_effect(run_id, {**effect, "step": index}, after=signed)
            signed.commit()
            self._chain[run_id] = (index + 1, digest)
            return index

    def _advance_chain(self, run_id: str, step_count: int, head: bytes) -> Any:
        """Inside an open transaction: set the run's step count and chain head, re-signed.

        Returns the signer's pending signature; call its ``commit()`` once the transaction has.
        """
        signed = self._signer.step(run_id, step_count, head)
        self.engine.set_chain(run_id, step_count, head, signed.signature)
        return signed

    def attach_run(self, run_id: str) -> None:
        """Continue appending to an existing run (its step count and chain head are re-read);
        used by the trace writer process. Raises ``KeyError`` when the run is not in the file."""
        with self._lock:
            row = self.engine.resume_row(run_id)
            if row is None:
                raise KeyError(run_id)
            self._chain[run_id] = (int(row[0]), bytes(row[1]) if row[1] else GENESIS)
            effects = self.engine.effect_rows(run_id)
            self._signer.resume(
                run_id, signature=row[2], key_id=row[3],
                header=dict(zip(("name", "started", "pid", "host", "proc_start", "entry", "env",
                                 "parent_run", "parent_step"), row[4:])),
                steps=int(row[0]), head=row[1],
                effects=[dict(zip(("seq", "step", "site", "task", "ordinal", "name",
                                   "args_hash", "outcome", "value"), e)) for e in effects])

    def set_signature(self, run_id: str, *, signature: bytes, key_id: str, steps: int,
                      head: bytes | None, status: str, effects: int) -> bool:
        """Store ``signature`` (made by ``key_id``) on an existing run, only if the run still
        has the ``steps``, chain ``head``, ``status`` and number of ``effects`` that were
        verified and signed (``snapstate sign``). Returns False when the run changed meanwhile
        (nothing is written)."""
        with self._lock:
            with self._transaction(immediate=True) as engine:
                row = engine.signed_state(run_id)
                if row is None or (row[0], bytes(row[1] or GENESIS), row[2], row[3]) != \
                        (steps, bytes(head or GENESIS), status, effects):
                    return False
                engine.set_run_signature(run_id, signature, key_id)
        return True

    def next_index(self, run_id: str) -> int:
        """The index the run's next step will get."""
        with self._lock:
            return self._chain[run_id][0]

    def append_chunk(self, run_id: str, count: int, data: bytes,
                     blob_items: dict[str, bytes]) -> int:
        """Write ``count`` traced steps encoded as one chunk (``store.chunks``) and the blobs
        they refer to, in one transaction; return the first step's index.

        The chain advances once per chunk over ``{"chunk": hash(data), "first", "count"}``
        (see ``schema`` version 2)."""
        with self._lock:
            first, previous = self._chain[run_id]
            digest = chain_hash(previous, chunk_chain_fields(data, first, count))
            with self._transaction() as engine:
                self._insert_blobs(blob_items)
                engine.insert_chunk(run_id, first, count, data, digest)
                signed = self._advance_chain(run_id, first + count, digest)
            signed.commit()
            self._chain[run_id] = (first + count, digest)
            return first

    def append_steps(self, run_id: str, records: list[StepRecord]) -> int:
        """Write ``records`` as the run's next steps in one transaction; return the last index.

        The recorder writes one step per transaction (crash safety: each completed step is
        committed); this is for bulk imports (``export``, benchmark files). The run's chain head
        is signed once, after the last record.
        """
        with self._lock:
            index, previous = self._chain[run_id]
            rows = []
            with self._transaction() as engine:
                for record in records:
                    digest = chain_hash(previous, record.chain_fields())
                    self._insert_blobs(record.blobs, record.manifests, record.bases)
                    rows.append(_step_row(run_id, index, record, digest))
                    index, previous = index + 1, digest
                engine.insert_steps(rows)
                signed = self._advance_chain(run_id, index, previous)
            signed.commit()
            self._chain[run_id] = (index, previous)
            return index - 1

    def _insert_blobs(self, items: dict[str, bytes], manifests: set[str] | frozenset = frozenset(),
                      bases: dict[str, str] | None = None) -> None:
        """Queue the blobs not yet in the file (as deltas where a base is known), inside a
        ``_transaction``, which forgets them again if it is rolled back."""
        rows = []
        for key, data in items.items():
            if key in self._known:
                continue
            base = None
            depth = 0
            base_key = bases.get(key) if bases else None
            if base_key is not None:
                known = self._recent.get(base_key)
                if known is not None and known[1] < blobs.max_chain(len(data)):
                    base = (bytes.fromhex(base_key), known[0])
            digest, codec, stored = blobs.encode(data, base, manifest=key in manifests,
                                                 key=bytes.fromhex(key))
            if blobs.delta_base(codec, stored) is not None:
                depth = self._recent[base_key][1] + 1  # type: ignore[index]
            rows.append((digest, codec, len(data), stored))
            self._known.add(key)
            self._pending.append(key)
            self._remember(key, data, depth)
        if rows:
            self.engine.insert_blobs(rows)

    def _remember(self, key: str, data: bytes, depth: int) -> None:
        """Keep ``data`` as a possible delta base (only blobs small enough to be worth it)."""
        if len(data) > RECENT_MAX_BLOB:
            return
        self._recent[key] = (data, depth)
        self._recent_bytes += len(data)
        while self._recent_bytes > RECENT_LIMIT:
            _, (old, _) = self._recent.popitem(last=False)
            self._recent_bytes -= len(old)

    def add_stored_blobs(self, rows: list[tuple[bytes, int, int, bytes]]) -> None:
        """Insert blob rows exactly as another file stores them (``(hash, codec, size, data)``;
        deltas need their bases among them). For ``export``; one transaction."""
        with self._lock:
            with self._transaction() as engine:
                engine.insert_blobs(rows)
            self._known.update(row[0].hex() for row in rows)

    def add_effect(self, run_id: str, row: dict[str, Any], blob_items: dict[str, bytes]) -> None:
        """Append one entry to the run's effect journal (see schema ``effects``)."""
        with self._lock:
            with self._transaction():
                self._insert_blobs(blob_items)
                signed = self._insert_effect(run_id, row)
            signed.commit()

    def _insert_effect(self, run_id: str, row: dict[str, Any], after: Any = None) -> Any:
        """Insert one journal row inside the caller's transaction; return the signer's staged
        signature (committed by the caller after COMMIT), covering ``after`` (a step staged
        in the same transaction) too."""
        fields = dict(seq=row["seq"], step=row.get("step"), site=row["site"],
                      task=row.get("task"), ordinal=row["ordinal"], name=row["name"],
                      args_hash=row.get("args_hash"), outcome=row["outcome"],
                      value=json.dumps(row.get("value")))
        self.engine.insert_effect(run_id, fields)
        signed = self._signer.effect(run_id, after=after, **fields)
        if signed.signature is not None:
            self.engine.set_run_signature(run_id, signed.signature)
        return signed

    def end_run(self, run_id: str, status: str, error: dict[str, Any] | None = None) -> None:
        """Set the run's final ``status`` (``finished``/``failed``) and end time."""
        ended, error_text = time.time(), json.dumps(error) if error else None
        with self._lock:
            signed = self._signer.end(run_id, status=status, ended=ended, error=error_text)
            self.engine.finish_run(run_id, status, ended, error_text, signed.signature)
            signed.commit()

    def _worth_compacting(self) -> bool:
        """Whether closing would compact the file (``store.sqlite.writing``)."""
        return self.engine._worth_compacting()

    def close(self) -> None:
        """Finish writing: the engine folds its journal and compacts a small file; safe to
        call twice (``store.sqlite.writing.SQLiteWriteEngine.close``)."""
        with self._lock:
            self.engine.close()
