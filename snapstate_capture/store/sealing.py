"""What a run's seal covers: every stored field a reader shows, in one statement per run.

A run's **statement** (``run_statement``) is canonical JSON over

- its header: id, name, start time, pid/host/process start, entry (what replay executes),
  environment and parent;
- the key id it is signed with (None when unsigned), so a signature cannot be re-attributed;
- the head of its step chain (``step_fields``: every column of a ``steps`` row — kind, label,
  times, thread, task, the innermost frame's function/file/line, depth, number of changed
  locals, frame hashes, extras, capture errors — and each trace chunk's bytes), which covers
  every frame record, preview, payload and source through their content hashes;
- its effect journal, chained the same way (``effect_fields``);
- its end (status, end time, error or pause), once known.

The writer stores ``seal = BLAKE2b-128(statement + seq)`` in the ``runs`` row of every run,
signed or not, in the same transaction as each change; ``seq`` is the run's place in its store
(which run is "last"). A signer (``trust.signing``) signs the statement without ``seq``, so a
run moved to another store (``push``/``pull``) keeps its signature and is re-sealed there with
its new place. ``trust.verify`` recomputes both from the rows: a field edited anywhere changes
them. Runs written before format 4 have no seal and are checked with the version-1 forms kept
here; a sealed run's chain is marked ``"v": 2``, so removing its seal does not make it pass for
an older run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .hashing import GENESIS, canonical_json, chain_hash, content_hash

#: The statement and step-chain form of sealed runs (format 4); 1 is the form before it.
VERSION = 2


def header_digest(*, run_id: str, name: str, started: float, pid: int | None,
                  host: str | None, proc_start: str | None, entry: str, env: str,
                  parent_run: str | None, parent_step: int | None) -> bytes:
    """Hash of a run's header as stored in its ``runs`` row (``entry``/``env`` as stored text).
    Raises ``TypeError``/``ValueError`` on a field of a type the writer never stores."""
    return content_hash(canonical_json({
        "id": run_id, "name": name, "started": repr(float(started)), "pid": pid, "host": host,
        "proc_start": proc_start, "entry": entry, "env": env, "parent_run": parent_run,
        "parent_step": parent_step}))


def effect_fields(*, seq: int, step: int | None, site: str, task: str | None, ordinal: int,
                  name: str, args_hash: str | None, outcome: str, value: str | None
                  ) -> dict[str, Any]:
    """The effect-journal row as chained (``value`` is the stored JSON text)."""
    return {"seq": seq, "step": step, "site": site, "task": task, "ordinal": ordinal,
            "name": name, "args_hash": args_hash, "outcome": outcome, "value": value}


def end_fields(*, status: str, ended: float | None, error: str | None) -> dict[str, Any]:
    """The end of a run as sealed (``error`` is the stored JSON text)."""
    return {"status": status, "ended": None if ended is None else repr(float(ended)),
            "error": error}


def step_fields(kind: str, label: str | None, wall: float, mono: float, thread: str,
                task: str | None, frames: list[str], extra: dict[str, Any] | None,
                errors: list[str] | None, *, function: str | None = None,
                filename: str | None = None, lineno: int | None = None, depth: int = 0,
                n_changed: int = 0, version: int = VERSION) -> dict[str, Any]:
    """The dict hashed into the chain for one ``steps`` row. Version 1 left out the columns
    derived from the stack (function, filename, lineno, depth, n_changed); from version 2 every
    column a reader shows is in."""
    fields = {"kind": kind, "label": label, "wall": repr(wall), "mono": repr(mono),
              "thread": thread, "task": task, "frames": frames, "extra": extra or {},
              "errors": errors or []}
    if version >= 2:
        fields.update(v=version, function=function, filename=filename, lineno=lineno,
                      depth=depth, n_changed=n_changed)
    return fields


def chunk_fields(data: bytes, first: int, count: int, *, version: int = VERSION
                 ) -> dict[str, Any]:
    """The dict hashed into the chain for one trace chunk (its bytes cover every step in it)."""
    fields = {"chunk": content_hash(data).hex(), "first": first, "count": count}
    if version >= 2:
        fields["v"] = version
    return fields


@dataclass(frozen=True)
class RunState:
    """What a run's seal and signature cover at one moment (see the module docstring)."""

    run_id: str
    header: bytes
    key_id: str | None = None
    #: The run's place in its store: sealed, not signed (see the module docstring).
    seq: int | None = None
    steps: int = 0
    head: bytes = GENESIS
    effects: int = 0
    effects_head: bytes = GENESIS
    end: dict[str, Any] | None = None
    version: int = VERSION

    def with_effect(self, fields: dict[str, Any]) -> RunState:
        """This state with one more effect-journal entry (``effect_fields``)."""
        return replace(self, effects=self.effects + 1,
                       effects_head=chain_hash(self.effects_head, fields))

    def with_steps(self, count: int, head: bytes) -> RunState:
        """This state with ``count`` steps whose chain head is ``head``."""
        return replace(self, steps=count, head=head)

    def with_end(self, **fields: Any) -> RunState:
        """This state ended (``end_fields`` arguments)."""
        return replace(self, end=end_fields(**fields))


def run_statement(state: RunState) -> bytes:
    """The canonical bytes signed for ``state`` (sealed with its ``seq``: ``seal_of``)."""
    statement = {"v": state.version, "run": state.run_id, "header": state.header.hex(),
                 "steps": state.steps, "head": (state.head or GENESIS).hex(),
                 "effects": state.effects, "effects_head": state.effects_head.hex(),
                 "end": state.end}
    if state.version >= 2:
        statement["key_id"] = state.key_id
    return canonical_json(statement)


def seal_of(state: RunState, statement: bytes | None = None) -> bytes:
    """The ``runs.seal`` of ``state``: BLAKE2b-128 of its statement and ``seq`` (16 bytes).
    ``statement``: ``run_statement(state)``, when the caller made it already. Raises
    ``TypeError`` when ``seq`` is not an integer."""
    if not isinstance(state.seq, int) or isinstance(state.seq, bool):
        raise TypeError("a run's seq is an integer")
    if statement is None:
        statement = run_statement(state)
    return content_hash(statement + b"\nseq=" + str(state.seq).encode("ascii"))
