"""Run signatures: HMAC-SHA256 over everything that makes a run what it is.

A run's signature covers one canonical JSON *statement* (``run_statement``)::

    {"v": 1, "run": id, "header": H(header fields), "steps": n, "head": step chain head,
     "effects": m, "effects_head": effect chain head, "end": {status, ended, error} | null}

- the header: name, start time, pid/host, entry (how replay starts the program again!), env,
  parent — so a signed run cannot be re-pointed at another script;
- the step chain head (``integrity.chain_hash``), which covers every step row, and through
  content hashes every frame record, preview, payload and source the steps reference;
- the effect journal, chained the same way (replay serves payloads from it);
- the end of the run (status, end time, error), once known.

The recorder re-signs after every step, effect and the end, in the same transaction as the row
it covers, so a killed recorder leaves a run signed up to its last completed step
(DESIGN.md "Trust"). ``snapstate_capture.trust.verify`` recomputes the statement from the rows.
The HMAC key is the user key's signing subkey (``keys.UserKey.signing``); RFC 2104 HMAC with
SHA-256 from the stdlib.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, replace
from typing import Any

from ..store.hashing import GENESIS, canonical_json, chain_hash, content_hash
from .keys import UserKey

VERSION = 1


def header_digest(*, run_id: str, name: str, started: float, pid: int | None,
                  host: str | None, proc_start: str | None, entry: str, env: str,
                  parent_run: str | None, parent_step: int | None) -> bytes:
    """Hash of a run's header as stored in its ``runs`` row (``entry``/``env`` as stored text)."""
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
    """The end of a run as signed (``error`` is the stored JSON text)."""
    return {"status": status, "ended": None if ended is None else repr(float(ended)),
            "error": error}


@dataclass(frozen=True)
class RunState:
    """What a run's signature covers at one moment (see the module docstring)."""

    run_id: str
    header: bytes
    steps: int = 0
    head: bytes = GENESIS
    effects: int = 0
    effects_head: bytes = GENESIS
    end: dict[str, Any] | None = None

    def with_effect(self, fields: dict[str, Any]) -> RunState:
        return replace(self, effects=self.effects + 1,
                       effects_head=chain_hash(self.effects_head, fields))


def run_statement(state: RunState) -> bytes:
    """The canonical bytes signed for ``state``."""
    return canonical_json({
        "v": VERSION, "run": state.run_id, "header": state.header.hex(), "steps": state.steps,
        "head": (state.head or GENESIS).hex(), "effects": state.effects,
        "effects_head": state.effects_head.hex(), "end": state.end})


def sign_state(key: UserKey, state: RunState) -> bytes:
    """HMAC-SHA256 of ``run_statement(state)`` under ``key``'s signing subkey (32 bytes)."""
    return hmac.new(key.signing, run_statement(state), hashlib.sha256).digest()


def check_signature(key: UserKey, state: RunState, signature: bytes) -> bool:
    """True when ``signature`` is ``state``'s signature under ``key`` (constant-time compare)."""
    return hmac.compare_digest(sign_state(key, state), bytes(signature))


class Staged:
    """A signature computed for a change not yet committed: ``signature`` / ``key_id`` to
    write with the change, ``commit()`` once the transaction succeeded (a rolled-back change
    never advances the signer)."""

    __slots__ = ("signature", "key_id", "_signer", "_state")

    def __init__(self, signer: RunSigner | None, state: RunState | None,
                 signature: bytes | None, key_id: str | None) -> None:
        self._signer, self._state = signer, state
        self.signature, self.key_id = signature, key_id

    def commit(self) -> None:
        if self._signer is not None and self._state is not None:
            self._signer._states[self._state.run_id] = self._state


_UNSIGNED = Staged(None, None, None, None)


class RunSigner:
    """Signs the runs one ``TimelineWriter`` writes; ``RunSigner(None)`` signs nothing.

    The writer calls ``begin`` / ``step`` / ``effect`` / ``end`` inside the transaction that
    writes the row, stores ``.signature`` (and ``.key_id`` at begin) in the ``runs`` row, and
    calls ``.commit()`` after COMMIT. Each call is one HMAC over ~300 bytes (a few µs).
    """

    def __init__(self, key: UserKey | None) -> None:
        self.key = key
        self._states: dict[str, RunState] = {}

    @property
    def key_id(self) -> str | None:
        return self.key.key_id if self.key else None

    def _stage(self, state: RunState) -> Staged:
        assert self.key is not None
        return Staged(self, state, sign_state(self.key, state), self.key.key_id)

    def begin(self, run_id: str, **header: Any) -> Staged:
        """Sign a new run with no steps; ``header`` as ``header_digest`` takes it."""
        if self.key is None:
            return _UNSIGNED
        return self._stage(RunState(run_id, header_digest(run_id=run_id, **header)))

    def step(self, run_id: str, count: int, head: bytes) -> Staged:
        """Sign the run with ``count`` steps whose chain head is ``head``."""
        state = self._states.get(run_id)
        if self.key is None or state is None:
            return _UNSIGNED
        return self._stage(replace(state, steps=count, head=head))

    def effect(self, run_id: str, *, after: Staged | None = None, **fields: Any) -> Staged:
        """Sign the run with one more effect-journal entry (``effect_fields`` arguments).

        ``after``: a change staged in the same transaction (the effect's own step) that this
        signature must also cover.
        """
        state = after._state if after is not None and after._state is not None \
            else self._states.get(run_id)
        if self.key is None or state is None:
            return _UNSIGNED
        return self._stage(state.with_effect(effect_fields(**fields)))

    def end(self, run_id: str, **fields: Any) -> Staged:
        """Sign the run's end (``end_fields`` arguments)."""
        state = self._states.get(run_id)
        if self.key is None or state is None:
            return _UNSIGNED
        return self._stage(replace(state, end=end_fields(**fields)))

    def resume(self, run_id: str, *, signature: Any, key_id: Any, header: dict[str, Any],
               steps: int, head: bytes | None, effects: list[dict[str, Any]]) -> bool:
        """Continue signing a run another writer began (the trace writer process attaching to
        the recorder's run). Only when the run's stored signature verifies under this key as
        it stands — resuming must never re-sign (launder) a run altered in between.

        ``header`` as ``header_digest`` takes it; ``effects``: the journal rows in ``seq``
        order, as ``effect_fields`` takes them. Returns True when signing resumed.
        """
        if self.key is None or key_id != self.key.key_id or not isinstance(signature, bytes):
            return False
        try:
            state = RunState(run_id, header_digest(run_id=run_id, **header), steps=steps,
                             head=head or GENESIS)
            for fields in effects:
                state = state.with_effect(effect_fields(**fields))
        except (TypeError, ValueError):
            return False
        if not check_signature(self.key, state, signature):
            return False
        self._states[run_id] = state
        return True
