"""The storage engine interface: what a place that holds timelines must do.

Everything above the engine — the reader (``store.reader``), the writer (``store.writer``), the
trace writer process, ``verify``, ``gc``/``export``, replay's journal and the inspector's
queries — goes through these methods; none of it writes SQL. SQLite (``store.sqlite``) is the
embedded engine, a timeline *file*; a PostgreSQL engine implements the same contract for a
shared store (a ``postgresql://`` URL wherever a path is taken).

Rows are plain tuples in the column orders below (the reader checks every field it is handed
with ``store.sanitize``: rows may have been written by anyone). Binary keys are the 16-byte
content hashes of ``store.hashing``; hex strings are used above the engine.

Errors: an engine raises ``TimelineError`` naming the location for anything the store cannot
answer (missing, not a timeline, damaged, newer format, closed), never its driver's own
exceptions. Reads may come from several threads at once (the inspector's workers): a read
engine serialises them itself.

Atomicity (write engines): ``transaction()`` is one atomic unit — all of its statements land or
none does, and a process killed inside one leaves the store as it was before it. The writer
relies on it: a step row, its blobs, its effect row and the run's new chain head, seal and
signature are written in one transaction, so a reader never sees a step without its chain or a chain head
without its step. ``begin_run`` assigns ``seq`` (the run's order in the store) inside its
transaction, so concurrent writers get distinct, increasing numbers. Blob inserts are idempotent
(content-addressed: inserting an existing key is a no-op).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

#: Column order of a run row (``ReadEngine.run_rows``).
RUN_COLUMNS = ("id", "seq", "name", "status", "started", "ended", "pid", "host", "proc_start",
               "entry", "env", "parent_run", "parent_step", "error", "step_count", "chain_head",
               "signature", "key_id")
#: Column order of a step row (``ReadEngine.step_row``, ``step_rows``).
STEP_COLUMNS = ("idx", "kind", "label", "wall", "mono", "thread", "task", "function", "filename",
                "lineno", "depth", "frames", "extra", "errors", "n_changed", "hash")
#: Column order of a step summary row (``ReadEngine.summary_rows``): no JSON columns.
SUMMARY_COLUMNS = ("idx", "kind", "label", "wall", "function", "filename", "lineno", "depth",
                   "n_changed", "thread", "task")
#: Column order of an effect journal row (``ReadEngine.effect_rows``).
EFFECT_COLUMNS = ("seq", "step", "site", "task", "ordinal", "name", "args_hash", "outcome",
                  "value")
#: Column order of a blob row (``ReadEngine.blob_row``): codec, uncompressed size, stored bytes.
BLOB_COLUMNS = ("codec", "size", "data")

#: Step conditions ``ReadEngine.find_step``/``matching_steps`` take (``store.reader.Steps.find``).
STEP_CONDITIONS = ("kind", "function", "label", "thread", "max_depth", "text", "new_stretch")


class ReadEngine(Protocol):
    """Read access to one store (a file, or a database). Thread-safe; ``close()`` ends it."""

    location: str

    def close(self) -> None:
        """Release the connection; later calls raise ``TimelineError``."""

    # -- runs ---------------------------------------------------------------------------------
    def run_rows(self) -> list[tuple]:
        """Every run, ``RUN_COLUMNS`` order, by ``seq`` (creation order)."""

    def run_page(self, *, before: int | None = None, limit: int = 100,
                 where: dict[str, Any] | None = None) -> list[tuple]:
        """Up to ``limit`` runs (``RUN_COLUMNS``) with ``seq < before`` matching ``where``
        (``RUN_FILTERS``: status, user, host, text), newest first: keyset pages over a store
        of any size (``store.sqlite.run_list``)."""

    def run_count(self, where: dict[str, Any] | None = None) -> int:
        """How many runs match ``where``."""

    def run_seq_at(self, offset: int, where: dict[str, Any] | None = None) -> int | None:
        """The ``seq`` of the ``offset``-th newest run matching ``where`` (None past the end)."""

    def runs_by_id(self, prefix: str, limit: int = 2) -> list[tuple]:
        """Up to ``limit`` runs whose id starts with ``prefix``, by seq."""

    def last_run_row(self) -> tuple | None:
        """The newest run, or None."""

    def step_bounds(self, run_id: str) -> tuple[Any, Any, Any]:
        """``(stored step_count, max step-row idx + 1, max trace-chunk end)``; each may be None
        (no run, no rows, no chunks). ``len(run.steps)`` is derived from these."""

    # -- steps (one row per checkpoint/effect/@step step; traced steps live in chunks) -------
    def step_row(self, run_id: str, index: int) -> tuple | None:
        """The step row ``index`` of ``run_id`` (``STEP_COLUMNS``), or None."""

    def step_rows(self, run_id: str, start: int, stop: int) -> list[tuple]:
        """Step rows with ``start <= idx < stop``, by idx."""

    def summary_rows(self, run_id: str, start: int, stop: int) -> list[tuple]:
        """Summary rows (``SUMMARY_COLUMNS``) with ``start <= idx < stop``, by idx."""

    def find_step(self, run_id: str, after: int, backward: bool,
                  where: dict[str, Any]) -> int | None:
        """The first step row after ``after`` (before, when ``backward``) matching ``where``
        (``STEP_CONDITIONS``; semantics in ``store.reader.Steps.find``), or None."""

    def matching_steps(self, run_id: str, start: int, stop: int,
                       where: dict[str, Any]) -> list[int]:
        """Indexes of step rows in ``start`` … ``stop - 1`` matching ``where``, ascending."""

    def frame_key_rows(self, run_id: str, start: int, stop: int) -> list[tuple[int, Any]]:
        """``(idx, frames JSON)`` of step rows in ``start`` … ``stop - 1``."""

    def state_rows(self, run_id: str, start: int, stop: int) -> list[tuple[int, Any, Any]]:
        """``(idx, frames JSON, extra JSON)`` of step rows in ``start`` … ``stop - 1``."""

    def changed_totals(self, run_id: str, start: int, stop: int,
                       buckets: int) -> list[tuple[int, int]]:
        """``(bucket, sum of n_changed)`` over step rows, ``[start, stop)`` cut into
        ``buckets`` equal ranges (bucket = (idx - start) * buckets // (stop - start))."""

    def distinct_frames(self, run_id: str) -> list[Any]:
        """Every distinct frames-JSON value among the run's step rows."""

    def step_row_count(self, run_id: str, start: int = 0) -> int:
        """How many step rows the run has with ``idx >= start``."""

    def chain_rows(self, run_id: str, after: int, stop: int, limit: int) -> list[tuple]:
        """What the hash chain covers, for verify: ``(idx, kind, label, wall, mono, thread,
        task, frames, extra, errors, function, filename, lineno, depth, n_changed, hash)`` of
        step rows with ``after < idx < stop``, at most ``limit``, by idx."""

    def run_header(self, run_id: str) -> tuple | None:
        """``(name, started, pid, host, proc_start, entry, env, parent_run, parent_step,
        status, ended, error, step_count, chain_head, signature, key_id, seq, seal)`` for
        verify (``seal`` None in stores from before seals: ``store.sealing``)."""

    def orphan_counts(self) -> list[tuple[str, Any, int]]:
        """``(table, run_id, rows)`` for step, trace-chunk and journal rows whose run has no
        run row: a run record deleted or re-keyed (gc removes a run's rows together)."""

    def snapshot(self) -> AbstractContextManager[None]:
        """Inside the block every read sees the store as of one committed moment (one read
        transaction; nested blocks share it), while writers go on committing: what ``verify``
        needs on a store still being written."""

    # -- blobs (content-addressed, encoded by ``store.blobs``) --------------------------------
    def blob_row(self, key: bytes) -> tuple | None:
        """``(codec, size, data)`` of blob ``key``, or None when it is missing."""

    def blob_chain(self, key: bytes, max_depth: int, *, head_only: bool = False) -> list[tuple]:
        """``(hash, codec, size, data)`` of blob ``key`` and of every delta base below it
        (a delta's base key is its data's first 16 bytes), at most ``max_depth`` deep, in one
        round trip. ``head_only``: ``data`` is only the first 16 bytes (to check sizes)."""

    def blob_rows(self, keys: Sequence[bytes]) -> list[tuple]:
        """``(hash, codec, size, data)`` of those ``keys`` that exist, in one round trip (the
        caller bounds how many keys: ``store.blobs.READ_AHEAD``)."""

    def blob_sizes(self, keys: Sequence[bytes]) -> list[tuple[bytes, int]]:
        """``(hash, size)`` of those ``keys`` that exist."""

    def blob_keys_after(self, key: bytes, limit: int) -> list[bytes]:
        """Up to ``limit`` blob keys greater than ``key``, ascending (to page over all)."""

    # -- trace chunks --------------------------------------------------------------------------
    def has_trace_chunks(self) -> bool:
        """Whether the store can hold trace chunks at all (older files cannot)."""

    def run_has_chunks(self, run_id: str) -> bool:
        """Whether run ``run_id`` has steps in trace chunks."""

    def chunk_data(self, run_id: str, first: int) -> Any:
        """The stored data of the chunk starting at step ``first`` (None when missing)."""

    def chunk_at(self, run_id: str, index: int) -> tuple[int, int] | None:
        """``(first, count)`` of the last chunk starting at or before ``index``, or None."""

    def chunks_overlapping(self, run_id: str, start: int, stop: int) -> list[tuple[int, int]]:
        """``(first, count)`` of chunks overlapping ``[start, stop)``, by first."""

    def chunk_page(self, run_id: str, start: int, stop: int, bound: int, limit: int, *,
                   backward: bool = False) -> list[tuple]:
        """``(first, count, data, hash)`` of at most ``limit`` chunks holding steps of
        ``[start, stop)``: those with ``first > bound`` ascending, or (``backward``) those with
        ``first < bound`` descending. Paging: pass the last ``first`` seen as ``bound``."""

    # -- effect journal ------------------------------------------------------------------------
    def effect_rows(self, run_id: str, *, after_seq: int = -1, limit: int | None = None,
                    max_step: int | None = None) -> list[tuple]:
        """The run's effect journal (``EFFECT_COLUMNS``) by seq: rows with ``seq > after_seq``,
        at most ``limit``, only those made at or before step ``max_step`` when given."""

    # -- resume leases (``store/leases.py``; format 6) --------------------------------------
    def lease_rows(self) -> list[tuple]:
        """Every lease row: ``(run_id, token, user, host, pid, acquired, renewed, expires,
        continued_as)``; none in a store without leases (a file of format 5 or older)."""

    # -- what gc marks and sweeps -------------------------------------------------------------
    def run_texts(self, run_id: str) -> list[Any]:
        """The run's JSON texts that may name blobs: entry, env, each step row's frames and
        extra, each journal value."""

    def run_chunk_data(self, run_id: str) -> list[Any]:
        """The stored data of every trace chunk of the run."""

    def stored_blob_sizes(self) -> list[tuple[bytes, int]]:
        """``(hash, stored bytes)`` of every blob."""

    # -- the store as a whole ------------------------------------------------------------------
    def check_storage(self) -> str | None:
        """The engine's own consistency check (SQLite ``quick_check``): None when sound, else
        the problem it names."""


class WriteEngine(Protocol):
    """Write access to one store; one writer object per process (``store.writer``)."""

    location: str

    def transaction(self, *, immediate: bool = False) -> AbstractContextManager[Any]:
        """One atomic unit (see the module docstring); ``immediate`` takes the write lock at
        once (needed to read-then-write, e.g. ``seq``). Yields a handle for the writes below."""

    def exclude_writers(self) -> None:
        """Inside a transaction: keep every other writer's transactions out until it ends
        (gc's sweep; a file's ``immediate`` transaction does already)."""

    def close(self, *, compact: bool = True) -> None:
        """Finish writing; ``compact`` reclaims free space where the engine can do that
        without leaving the store unreadable if killed meanwhile."""

    #: The driver's exception types a failed write raises (the writer turns them into
    #: ``errors.WriteFailed`` with ``describe_failure``'s words).
    write_errors: tuple[type[BaseException], ...]

    def check_place(self) -> None:
        """Raise ``errors.WriteFailed`` when what this engine writes no longer reaches readers
        (a file deleted or replaced while recording); called before every write."""

    def describe_failure(self, exc: BaseException) -> str:
        """A failed write in words: "the disk is full", "a write failed (…)"."""

    # Inside a transaction (``store.sqlite``'s modules document each):
    #   runs:    next_run_seq, insert_run, set_chain, set_run_signature, resume_row, signed_state,
    #            delete_runs; finish_run (its own statement). Each takes the run's new seal
    #            (``store.sealing``) with its new signature.
    #   steps:   insert_steps          blobs: insert_blobs, delete_blobs
    #   chunks:  insert_chunk          effects: insert_effect
    #   leases:  claim_continuation(run, token, continuation, now) -> bool: set continued_as
    #            only where token holds an unexpired lease and continued_as is NULL
    # Leases, each its own atomic transaction (``store/sqlite/leases.py``): lease_row(run),
    #   lease_take(row, now) -> (taken, row before): one conditional upsert, taken only where
    #   no token holds the row or it expired by now, lease_renew(run, token, now, expires) -> bool,
    #   lease_release(run, token) -> bool (both only where token holds the row).
    # A write engine also answers every ``ReadEngine`` question over its own connection, and
    # ``compact()`` (``gc``) rewrites the store without its free space.
