"""Whether a process that recorded or resumed a run is still there (Linux ``/proc``).

A run's header keeps its recorder's pid, host and start marker; a run stored ``running`` whose
process is gone reads as ``crashed`` (``reader.Run.status``), and a resume lease whose holder's
process is gone is taken a missed heartbeat later instead of at its expiry (``leases``).
"""

from __future__ import annotations

import os


def process_start_marker(pid: int) -> str | None:
    """Return a string that identifies process ``pid``'s start (Linux /proc), or None when
    there is no such process or it has exited (a zombie its parent has not reaped yet: a
    killed resumer's child under a PID 1 that reaps late)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
        fields = stat.rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else fields[19]
    except (OSError, IndexError):
        return None


def process_gone(pid: int) -> bool:
    """Whether no process ``pid`` runs on this machine: none has that pid, or it has exited (a
    zombie). Without ``/proc`` (macOS), by ``kill(pid, 0)``; a process of another user is
    alive there (the kill is refused, not "no such process")."""
    if os.path.isdir("/proc/self"):
        return process_start_marker(pid) is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
