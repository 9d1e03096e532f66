"""Signing a run after the fact (``snapstate sign``): the user vouches for a run that verifies.

A run recorded before the user's key existed (or on a machine without one) is unsigned, so its
payloads load only with ``--trust``. ``sign_run`` checks the run end to end first — every blob it
uses against its hash, its step chain and effect journal — and signs exactly the statement it
recomputed from the rows (``verify.RunReport.state``), written only if the run did not change in
between. A run that does not verify is refused, never signed: signing must not launder an
altered file, nor a run signed by someone else.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import SnapStateError
from ..store.reader import Run, Timeline
from ..store.sealing import seal_of
from ..store.writer import TimelineWriter
from .keys import UserKey
from .signing import RunSigner, is_public
from .blob_check import scan_blobs
from .verify import RunReport, verify_run


class SignRefused(SnapStateError):
    """The run does not verify (altered, damaged, signed by another key, still recording);
    the message names the file, the run and why."""


@dataclass(frozen=True)
class SignResult:
    """``run_id`` signed by ``key_id``; ``already``: it was signed by this key before."""

    run_id: str
    key_id: str
    already: bool = False


def sign_run(timeline: Timeline, run: Run, key: UserKey) -> SignResult:
    """Sign ``run`` of ``timeline`` with ``key`` after checking it end to end.

    Raises ``SignRefused`` when the run is still being recorded, its chain or a blob it uses
    does not verify, its signature is invalid, or it is signed by another key; ``TimelineError``
    when the file cannot be read or written.
    """
    where = f"{timeline.path}: run {run.id[:8]}"
    if run.status == "running":
        raise SignRefused(f"{where} was not signed: it is still being recorded (pid {run.pid}); "
                          "sign it when it has ended")
    known, bad = scan_blobs(timeline)
    report = verify_run(timeline, run, key, known=known, bad=bad)
    problem = refusal(report)
    if problem:
        raise SignRefused(f"{where} was not signed: it {problem}")
    signer = RunSigner(key)
    if report.signature == "valid" and (is_public(run.signature) or not signer.public):
        return SignResult(run.id, key.key_id, already=True)
    # unsigned, or signed with HMAC by this key while it can be signed for the team (Ed25519)
    state = report.state
    assert state is not None  # an intact chain always has its statement
    seal = None
    if state.version >= 2:  # the key id is part of what is sealed and signed
        state = replace(state, key_id=key.key_id)
        seal = seal_of(state)
    writer = TimelineWriter(timeline.location)  # a store's URL with its password
    try:
        written = writer.set_signature(run.id, signature=signer.sign(state),
                                       key_id=key.key_id, steps=state.steps, head=state.head,
                                       status=run.stored_status, effects=state.effects,
                                       seal=seal, expected_seal=report.seal)
    finally:
        writer.close()
    if not written:
        raise SignRefused(f"{where} was not signed: it changed while it was being checked; "
                          "run sign again")
    return SignResult(run.id, key.key_id)


def refusal(report: RunReport) -> str | None:
    """Why a run with this verify ``report`` may not be signed (a clause), or None."""
    if report.chain_broken_at is not None:
        return f"does not verify: chain broken at step {report.chain_broken_at} " \
               f"({report.chain_problem})"
    if report.chain_problem:
        return f"does not verify: {report.chain_problem}"
    if report.corrupt:
        first = next(iter(report.corrupt.values()))
        return (f"does not verify: {len(report.corrupt)} blob(s) it uses are missing or "
                f"corrupt ({first.kind} {first.problem})")
    if report.signature == "invalid":
        return "has an invalid signature (altered after it was signed)"
    if report.signature == "other-key":
        return (f"is signed by another key ({report.key_id}), which sign cannot check; if you "
                "trust whoever signed it, pass --trust where it is loaded")
    if report.signature == "trusted":
        return (f"is signed by {report.signer} ({report.key_id}), whom you trust: it loads "
                "without --trust already, and only its author signs it")
    if report.state is None:
        return "does not verify: its header is malformed"
    return None
