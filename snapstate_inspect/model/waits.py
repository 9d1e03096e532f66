"""Paused runs as the command line and the inspector show them (UI-free).

A run is **open** while it waits (or sleeps) and nobody continued it yet: ``open_pauses``
lists those; ``pause_text`` says in one line what a paused run waits for.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from snapstate_capture import Run


@dataclass(frozen=True)
class OpenPause:
    """One run that waits or sleeps and was not continued: ``kind`` is ``wait`` or
    ``sleep``; ``due`` the wake-up time of a sleep (epoch seconds), else None."""

    run: Run
    kind: str
    name: str
    prompt: str
    due: float | None
    schema: dict[str, Any] | None


def open_pauses(runs: list[Run]) -> list[OpenPause]:
    """The runs among ``runs`` that are waiting or sleeping and have no continuation."""
    out = []
    for run in runs:
        pause = run.pause
        if pause is None or run.continued_as:
            continue
        kind = "wait" if run.status == "waiting" else "sleep"
        due = pause.get("due")
        out.append(OpenPause(run, kind, str(pause.get("name") or ""),
                             str(pause.get("prompt") or pause.get("reason") or ""),
                             float(due) if isinstance(due, (int, float)) else None,
                             pause.get("schema") if isinstance(pause.get("schema"), dict)
                             else None))
    return out


def clock(when: float) -> str:
    """Local ``YYYY-MM-DD HH:MM:SS`` of epoch seconds ``when``."""
    return dt.datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S")


def pause_text(run: Run, limit: int = 60) -> str:
    """``waits for 'approval': Publish this calendar?`` for a waiting run, ``sleeps until
    2025-01-02 09:00:00 (rate limit)`` for a sleeping one, ``waited for 'approval', continued
    as 1a2b3c4d`` once continued; "" for other runs."""
    pause = run.pause
    if pause is None:
        return ""
    continued = run.continued_as
    if run.status == "sleeping":
        due = pause.get("due")
        when = clock(float(due)) if isinstance(due, (int, float)) else "?"
        reason = str(pause.get("reason") or "")
        text = (f"slept until {when}, continued as {continued[:8]}" if continued
                else f"sleeps until {when}" + (f" ({reason})" if reason else ""))
        return _cut(text, limit)
    name = f"{pause.get('name')!r}"
    if continued:
        return _cut(f"waited for {name}, continued as {continued[:8]}", limit)
    prompt = str(pause.get("prompt") or "")
    return _cut(f"waits for {name}" + (f": {prompt}" if prompt else ""), limit)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
