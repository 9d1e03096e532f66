"""The trust gate: the one place where a payload from a timeline file is unpickled.

Unpickling runs code chosen by whoever wrote the file (DESIGN.md "Trust"). A payload is loaded
only when

- its run verifies under the user's key (created on first record): chain intact and signature
  valid, so the bytes are what the user's own recorder wrote; or under the Ed25519 key of a
  teammate the user trusts (``snapstate trust add``, ``trust.trusted``); or
- the caller vouches for the file: ``trust=True`` (``--trust`` on the command line).

Previews are plain JSON and never need trust. Verdicts are cached per open file, run and key,
and re-checked when a live run grows. Replay and the REPL use ``require_trust(run, trust)``
before loading anything of a run.
"""

from __future__ import annotations

import os
import shlex
import socket
import weakref
from typing import TYPE_CHECKING, Any

from ..errors import PayloadLoadError, UntrustedPayloadError
from .keys import KeyFileError, find_key, key_path
from .trusted import trusted_by_id
from ..values import loads

if TYPE_CHECKING:
    from ..store.reader import Run, Timeline, Value
    from .verify import RunReport

_verdicts: weakref.WeakKeyDictionary[Timeline, dict[tuple[str, str], RunReport]] = \
    weakref.WeakKeyDictionary()

def run_report(run: Run) -> RunReport | None:
    """Verify ``run``'s chain and signature under the user's key and the teammates' keys they
    trust (cached); None with neither.

    Raises ``TimelineError`` when the file cannot be read, ``TrustFileError`` when the
    trusted-keys file cannot be used.
    """
    from .verify import verify_run

    try:
        key = find_key()
    except KeyFileError:
        key = None
    teammates = tuple(sorted(trusted_by_id()))
    if key is None and not teammates:
        return None
    cache = _verdicts.setdefault(run.timeline, {})
    which = (run.id, key.key_id if key else "", teammates)
    report = cache.get(which)
    if report is None or report.steps < len(run.steps):
        report = cache[which] = verify_run(run.timeline, run, key)
    return report


def untrusted_reason(run: Run, step_index: int | None = None) -> str | None:
    """Why payloads of ``run`` (at ``step_index``) may not be loaded without ``trust``, and
    what would make them load, as one clause ("is unsigned …: check it and pass --trust, or
    `snapstate sign FILE --run ID` …"); None when the run verifies under the user's key."""
    report = run_report(run)
    sign = f"`snapstate sign {shlex.quote(str(run.timeline.path))} --run {run.id[:8]}`"
    if report is None and run.key_id is not None:  # someone's run: signing it would fail
        return _no_key_signed_by(run.key_id)
    if report is None:
        return (f"cannot be checked: you have no key yet ({key_path()}); if you trust the "
                f"file pass --trust, or {sign} creates your key and signs the run as yours")
    if report.chain_broken_at is not None or report.chain_problem:
        return (f"is altered or damaged ({report.chain_problem}): `snapstate verify "
                f"{shlex.quote(str(run.timeline.path))}` shows where; only --trust loads it")
    if report.signature == "unsigned":
        return f"{_unsigned_why(run)}: check it and pass --trust, or {sign} to sign it as yours"
    if report.signature == "other-key" and report.public:
        return (f"is signed by another key ({report.key_id}; yours is {_own_key_id()}) that you "
                "do not trust: if you trust its owner, ask them for their public key (`snapstate "
                "keys export`) and run `snapstate trust add NAME KEY`; or pass --trust")
    if report.signature == "other-key":
        return (f"is signed by another key ({report.key_id}; yours is {_own_key_id()}) with "
                "HMAC, which only its owner can check: its owner can sign it for the team "
                "(`pip install 'snapstate[crypto]'`, then "
                f"`snapstate sign {shlex.quote(str(run.timeline.path))} --run {run.id[:8]}`) "
                "and give you `snapstate keys export` for `snapstate trust add NAME KEY`; "
                "or, if you trust whoever signed it, pass --trust")
    if report.signature == "no-key":
        return _no_key_signed_by(report.key_id)
    if report.signature == "invalid":
        return ("has an invalid signature: it was altered after it was signed (`snapstate "
                f"verify {shlex.quote(str(run.timeline.path))}`); only --trust loads it")
    if report.signature not in ("valid", "trusted"):
        return f"is {report.signature}: pass --trust if you trust the file"
    if step_index is not None and step_index >= report.steps:
        return (f"was verified up to step {report.steps - 1} only (it is still being "
                "recorded): open it again, or pass --trust")
    return None


def _no_key_signed_by(key_id: str | None) -> str:
    return (f"is signed by key {key_id}, and you have no key yet ({key_path()}): if you "
            "trust its owner, ask them for `snapstate keys export` and run `snapstate trust "
            "add NAME KEY`; or pass --trust")


def _unsigned_why(run: Run) -> str:
    """"was recorded before your key existed" when that is so (this host, started before the
    key file was made), else "is unsigned"."""
    try:
        made = os.stat(key_path()).st_mtime
    except OSError:
        made = None
    if made is not None and run.host == socket.gethostname() and run.started < made:
        return "was recorded before your key existed"
    return "is unsigned"


def _own_key_id() -> str:
    try:
        key = find_key()
    except KeyFileError:
        key = None
    return key.key_id if key else "none"


def is_trusted(run: Run) -> bool:
    """True when ``run`` verifies under the user's key or a trusted teammate's (its payloads
    load without trust)."""
    return untrusted_reason(run) is None


def require_trust(run: Run, *, trust: bool = False, what: str = "payloads") -> None:
    """Raise ``UntrustedPayloadError`` unless ``trust`` or ``run`` verifies under the user's key.

    For replay, fork and the REPL: call once before loading any payload of ``run``. The message
    says what would make it pass for this run (see ``untrusted_reason``).
    """
    if trust:
        return
    reason = untrusted_reason(run)
    if reason is not None:
        raise UntrustedPayloadError(
            f"{run.timeline.path}: refusing to load {what} (loading runs code from the file): "
            f"run {run.id[:8]} {reason}")


def require_value_trust(value: Value, *, trust: bool) -> None:
    """Raise ``UntrustedPayloadError`` unless ``trust`` or ``value``'s run (at its step)
    verifies under the user's key: the check before any part of its payload is unpickled."""
    if trust:
        return
    step = value.step
    reason = ("was not read from a step" if step is None
              else untrusted_reason(step.run, step.index))
    if reason is not None:
        raise UntrustedPayloadError(
            f"{value.timeline.path}: refusing to load {value.name!r} (loading runs code "
            f"from the file): its run {reason} (trust=True in Python)")


def load_payload(value: Value, *, trust: bool) -> Any:
    """Return the object stored in ``value``'s payload.

    Raises ``UntrustedPayloadError`` when ``trust`` is False and the value's run does not verify
    under the user's key (a value not read through a step is never trusted implicitly);
    ``PayloadLoadError`` when the value has no payload, is encrypted with a key you lack, or
    unpickling fails; ``IntegrityError`` when the payload bytes are corrupt.
    """
    require_value_trust(value, trust=trust)
    if getattr(value, "is_inline", False):
        return value.ref["v"]  # a scalar stored as plain data: nothing to unpickle
    if not value.payload_key or not value.serializer:
        reason = (value.preview.get("placeholder") or {}).get("reason", "no payload stored")
        raise PayloadLoadError(f"{value.timeline.path}: {value.name!r} has no payload ({reason})")
    if value.ref.get("x"):
        from .encryption import LockedError, unseal_blob

        try:
            data = unseal_blob(value.timeline, value.payload_key, str(value.ref["x"]))
        except LockedError as exc:
            raise PayloadLoadError(f"{value.timeline.path}: {value.name!r} is locked: "
                                   f"{exc}") from None
    else:
        data = value.timeline.blob(value.payload_key)
    try:
        return loads(value.serializer, data)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is reported the same way
        raise PayloadLoadError(
            f"{value.timeline.path}: {value.name!r} could not be loaded: "
            f"{type(exc).__name__}: {exc}") from exc


class TrustGate:
    """The payload gate (``store.records.PayloadGate``) of every timeline opened through
    ``open_timeline``: ``load`` is ``load_payload``, ``unseal`` decrypts a sealed preview."""

    def load(self, value: Value, *, trust: bool) -> Any:
        return load_payload(value, trust=trust)

    def unseal(self, value: Value) -> dict[str, Any]:
        from .encryption import sealed_preview

        return sealed_preview(value)


GATE = TrustGate()


def open_timeline(path: str | os.PathLike[str], *, trust: bool = False) -> Timeline:
    """Open the timeline file (or store URL) at ``path`` for reading, behind the trust gate.

    ``trust=True`` allows ``Value.load()`` to unpickle payloads from this file (it runs code from
    the file; see DESIGN.md "Trust"); without it a payload loads only when its run verifies under
    the user's key. Raises ``TimelineError`` naming the file and the problem.
    """
    from ..store.reader import Timeline

    return Timeline(path, trust=trust, gate=GATE)
