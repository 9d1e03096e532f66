"""Whether the selected run's payloads would load without ``--trust`` — what the status bar
says of it (``widgets/status.TRUST_LABELS``): the trust gate's verdict (trust/gate.py), and
under whose key."""

from __future__ import annotations

from typing import Any

#: Runs up to this many steps have their signature checked on the spot (~30 ms: verifying reads
#: every step, 0.32 s for 5,000 steps on a 2-core machine); longer ones
#: in a worker, the status bar saying "checking" meanwhile.
SYNC_TRUST_STEPS = 500


def trust_verdict(run: Any) -> str:
    """``status.TRUST_LABELS`` key of ``run`` without ``--trust``: whether its payloads load
    (trust/gate.py), and under whose key; "altered" when its steps or signature no longer
    match what was recorded (told at once, not only when a replay is refused)."""
    from snapstate_capture.trust.gate import run_report, untrusted_reason

    try:
        report = run_report(run)
        if report is not None and (report.chain_broken_at is not None or report.chain_problem
                                   or report.signature == "invalid"):
            return "altered"
        if untrusted_reason(run) is not None:
            return "untrusted"
    except Exception:  # noqa: BLE001 - an unreadable or damaged run: previews only
        return "untrusted"
    return "own" if report is not None and report.signature == "valid" else "teammate"
