"""Whether a process that recorded or resumed a run is still there (Linux ``/proc``).

A run's header keeps its recorder's pid, host and start marker (``process_facts``); a run
stored ``running`` whose process is gone reads as ``crashed`` (``reader.Run.status``), and a
resume lease whose holder's process is gone is taken a missed heartbeat later instead of at its
expiry (``leases``).
"""

from __future__ import annotations

import functools
import os
import socket
from typing import Any

from ..clocks import Clocks


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


def process_facts() -> dict[str, Any]:
    """What a run's header says of the process recording it, taken now: ``started`` (epoch
    seconds), ``pid``, ``host`` and ``proc_start`` (``process_start_marker``)."""
    pid = os.getpid()
    return dict(started=Clocks.time(), pid=pid, host=socket.gethostname(),
                proc_start=_own_start_marker(pid))


@functools.lru_cache(maxsize=8)
def _own_start_marker(pid: int) -> str | None:
    """``process_start_marker`` of this process, ``pid`` (read once: a process's start never
    changes; a forked child has another pid, so it reads its own)."""
    return process_start_marker(pid)
