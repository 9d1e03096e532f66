"""Continuing a paused or crashed run: ``snap.resume`` and ``snapstate resume`` (issue 17).

``resume(path, run=..., answer=...)`` continues one run of a timeline:

- a ``waiting`` run gets ``answer`` (checked first against the wait's stored JSON schema,
  ``capture/answers.py``): the run is replayed to its ``waiting`` step with every effect
  served, the answer is journaled as the wait's result with who gave it (user, host, when),
  and the program goes on live as the run's **continuation** — a new run in the same file
  whose parent is the waiting run at that step;
- a ``sleeping`` run is woken the same way once its due time has come;
- a ``crashed`` (or interrupted) run is replayed to its last step and continued live — a
  traced run to its last checkpoint or effect step (``replay/traced_stop.resume_point``:
  every completed effect is at or before it), the traced steps after it made again live.

One resumer at a time: the run's lease (``store/leases.py``) is taken first — a second
resumer is refused with who holds it and since when — and the continuation claims it when it
is created, so no run is continued twice. A lease whose holder died expires; resuming a run
whose continuation died on the way continues that continuation instead (the answer it
already journaled stands).
"""

from __future__ import annotations

import base64
import os
import pickle
import socket
import time
from typing import Any

from ..capture.answers import check_answer
from ..errors import SnapStateError
from ..store.leases import LeaseStore, lease_seconds, login_name
from ..store.locations import settle
from ..store.reader import Run
from ..trust.gate import open_timeline

#: Passed as ``answer`` when none is given (None is an answer).
NO_ANSWER: Any = type("NoAnswer", (), {"__repr__": lambda self: "NO_ANSWER"})()
#: Exceptions that mean "interrupted" rather than "failed" for a run stored as failed.
INTERRUPTS = ("KeyboardInterrupt", "SystemExit")


class ResumeError(SnapStateError):
    """The run cannot be resumed (the message says why and what to do)."""


class AnswerRefused(ResumeError):
    """The answer does not fit the wait's schema; nothing was recorded."""


class AlreadyContinued(ResumeError):
    """Another resume continued the run first (a second worker's pass over the same file)."""


class NeedsAnswer(ResumeError):
    """The run waits for an answer and none was given."""


class NotDue(ResumeError):
    """The sleeping run's due time has not come (``due``: epoch seconds)."""

    def __init__(self, message: str, due: float) -> None:
        super().__init__(message)
        self.due = due


def answered_by(by: str | None = None) -> dict[str, Any]:
    """Who answers, as journaled: ``{"user": by or the login, "login", "host", "at"}``."""
    login = login_name()
    return {"user": by or login, "login": login, "host": socket.gethostname(),
            "at": time.time()}


def resume(path: str | os.PathLike[str], *, run: str | None = None, answer: Any = NO_ANSWER,
           by: str | None = None, trust: bool = False, allow_drift: bool = False,
           wake_early: bool = False, progress: bool = False,
           capture_output: bool = False) -> dict[str, Any]:
    """Continue run ``run`` (id prefix; default the file's last run) of timeline ``path``.

    ``answer``: for a waiting run (any picklable value; ``NO_ANSWER`` when none). ``by``: the
    name journaled as who answered (default: the login). ``trust``: load the run's payloads
    although it is not signed with your key. ``allow_drift``: resume although the program's
    source changed outside ``patched`` blocks. ``wake_early``: wake a sleeping run before its
    due time.

    Returns the replay child's result dict: ``status`` (``ok`` | ``divergence``),
    ``message``, ``fork`` (``{"run": continuation id, "parent", "step"}``), ``fork_status``
    (``finished``, ``failed``, ``waiting``, ``sleeping``), ``pause`` (the new pause when the
    continuation stopped at another wait), ``exit_code`` (the child's: 0, 1, or 75 when it
    paused again), ``resumed`` (the run continued — another than ``run`` when that one's
    continuation had crashed) and ``notes``. Raises ``NeedsAnswer``, ``AnswerRefused``,
    ``NotDue``, ``ResumeError``, ``store.leases.LeaseHeld`` (another resumer holds the lease),
    ``UntrustedPayloadError``, ``TimelineError``.
    """
    notes: list[str] = []
    target, orphan = run, False
    try:
        for _ in range(64):  # a chain of crashed continuations is followed to its end
            outcome = _resume_one(path, target, answer, by, trust, allow_drift, wake_early,
                                  progress, capture_output, notes, orphan)
            if isinstance(outcome, dict):
                return outcome
            target, answer, orphan = outcome, NO_ANSWER, True
    finally:  # the continuation's steps, which its writer could not fold while this read
        settle(path)  # the file: into the file itself
    raise ResumeError(f"{path}: too many crashed continuations in a row")


def _resume_one(path: Any, run_id: str | None, answer: Any, by: str | None, trust: bool,
                allow_drift: bool, wake_early: bool, progress: bool, capture_output: bool,
                notes: list[str], orphan: bool) -> dict[str, Any] | str:
    """Resume one run; or return the id of its crashed continuation to resume instead.
    ``orphan``: the run is a continuation whose resumer's lease expired (it is crashed even
    when it was written on another host, where its process cannot be looked up)."""
    from ..replay.launch import replay
    from ..trust.gate import require_trust

    with open_timeline(path, trust=trust) as timeline:
        chosen = timeline.run(run_id)
        to, mode, handed = _plan(chosen, answer, by, wake_early, orphan)
        require_trust(chosen, trust=trust, what="effect results and the run's entry to resume")
        remap = _check_drift(chosen, allow_drift, notes)
        store = LeaseStore(timeline.location)
        try:
            holder, before = store.acquire(chosen.id)
            try:
                continued = before.continued_as if before is not None else None
                if not continued:  # a lease row is not pushed or pulled with its runs:
                    continued = chosen.continued_as  # the continuation's header says it
                if continued:
                    return _continued(timeline, chosen, continued, answer, notes)
                lease = {"run": chosen.id, "token": holder.token, "ttl": lease_seconds()}
                result = replay(chosen, to=to, mode=mode, trust=True, progress=progress,
                                capture_output=capture_output, lease=lease, resume=handed,
                                name=chosen.name if mode == "resume" else None,
                                remap_lines=remap)
            finally:
                store.release(chosen.id, holder.token)
        finally:
            store.close()
    if result.get("status") == "refused":
        raise AnswerRefused(f"{timeline.path}: {result.get('message')}; nothing was recorded")
    if result.get("status") == "error":
        raise ResumeError(f"{timeline.path}: {result.get('message')}")
    result["resumed"] = chosen.id
    result["notes"] = notes
    return result


def _plan(run: Run, answer: Any, by: str | None, wake_early: bool, orphan: bool = False
          ) -> tuple[int, str, dict[str, Any] | None]:
    """``(step to replay to, mode, what the wait gets)`` for resuming ``run``."""
    path, short = run.timeline.path, run.id[:8]
    count = len(run.steps)
    pause = run.pause or {}
    if run.status == "waiting":
        if answer is NO_ANSWER:
            raise NeedsAnswer(f"{path}: run {short} waits for {pause.get('name')!r}: give an "
                              "answer (--answer TEXT, --answer-json JSON or --answer-file F)")
        problem = check_answer(pause.get("schema"), answer)
        if problem is not None:
            raise AnswerRefused(f"{path}: answer refused for {pause.get('name')!r}: {problem};"
                                " nothing was recorded")
        return _pause_step(run, count), "resume", {"answer": _hand_over(path, answer),
                                                   "by": answered_by(by)}
    if run.status == "sleeping":
        due = float(pause.get("due") or 0)
        if due > time.time() and not wake_early:
            raise NotDue(f"{path}: run {short} sleeps until {_clock(due)}"
                         + (f" ({pause['reason']})" if pause.get("reason") else "")
                         + "; `snapstate worker` wakes it then (or `snapstate resume "
                         "--wake` now)", due)
        return _pause_step(run, count), "resume", {"answer": None, "by": answered_by(by)}
    error_type = str((run.error or {}).get("type", "")).rsplit(".", 1)[-1]
    interrupted = run.status == "failed" and error_type in INTERRUPTS
    if run.status == "running" and not orphan:
        raise ResumeError(f"{path}: run {short} is still running (pid {run.pid})")
    if run.status not in ("crashed", "running") and not interrupted:
        raise ResumeError(f"{path}: run {short} {run.status}; only a waiting, sleeping, "
                          "crashed or interrupted run can be resumed (use `snapstate replay "
                          "--to N --live` to fork it)")
    if count == 0:
        raise ResumeError(f"{path}: run {short} has no steps to resume from")
    last = max(count - 2, 0) if interrupted else count - 1
    if run.timeline.engine.run_has_chunks(run.id):  # traced: forks at a step stored at once
        from ..replay.traced_stop import resume_point

        try:
            last = resume_point(run, last)
        except ValueError as exc:
            raise ResumeError(f"{path}: run {short} cannot be resumed: {exc}") from None
    return last, "live", None


def _pause_step(run: Run, count: int) -> int:
    step = run.pause.get("step") if run.pause else None
    if not isinstance(step, int) or not 0 <= step < count:
        step = count - 1
    if count == 0 or run.steps[step].kind != "waiting":
        raise ResumeError(f"{run.timeline.path}: run {run.id[:8]} has no waiting step to "
                          "resume at (damaged file?)")
    return step


def _hand_over(path: Any, answer: Any) -> str:
    try:
        return base64.b64encode(pickle.dumps(answer, protocol=5)).decode("ascii")
    except Exception as exc:  # noqa: BLE001 - any pickling failure: the answer cannot travel
        raise ResumeError(f"{path}: the answer cannot be handed to the resumed program "
                          f"(not picklable: {exc})") from None


def _continued(timeline: Any, run: Run, continuation: str, answer: Any,
               notes: list[str]) -> str:
    """``run`` was continued already. Its continuation's writer is gone (we hold the lease):
    if the continuation stopped without an end, return its id to resume it; else refuse."""
    timeline.refresh()
    try:
        nxt = timeline.run(continuation)
    except SnapStateError:
        raise ResumeError(f"{timeline.path}: run {run.id[:8]} was continued as "
                          f"{continuation[:8]}, which is not in this file") from None
    if nxt.stored_status == "running":  # nobody renews the lease: its resumer died
        note = (f"run {run.id[:8]} was continued already as {nxt.id[:8]}, whose resumer "
                f"stopped; continuing {nxt.id[:8]} from its last step")
        if answer is not NO_ANSWER:
            note += " (the answer it journaled stands; the one given now is not used)"
        notes.append(note)
        return nxt.id
    raise AlreadyContinued(f"{timeline.path}: run {run.id[:8]} was already continued as "
                           f"{nxt.id[:8]} ({nxt.status}){_answered(nxt)}")


def _answered(continuation: Run) -> str:
    """`` — answered by alice@box at 2025-01-02 12:00:01`` from the journal row of the
    continuation's answer step (plain JSON: nothing is unpickled)."""
    parent = continuation.parent
    if parent is None:
        return ""
    import json

    step = parent.step + 1
    rows = [row for row in continuation.timeline.engine.effect_rows(
        continuation.id, max_step=step) if row[1] == step]
    try:
        who = json.loads(rows[0][-1]).get("w") if rows else None
    except (ValueError, TypeError, AttributeError):
        who = None
    if not isinstance(who, dict):
        return ""
    when = who.get("at")
    return (f" — answered by {who.get('user')}@{who.get('host')}"
            + (f" at {_clock(float(when))}" if isinstance(when, (int, float)) else ""))


def _check_drift(run: Run, allow_drift: bool, notes: list[str]) -> bool:
    """Refuse drift outside ``patched`` blocks unless ``allow_drift``; True when the code
    changed inside them only (the replay then maps recorded lines, ``replay/linemap.py``)."""
    from ..replay.drift import find_drift
    from ..replay.linemap import patched_only

    drift = find_drift(run)
    if not drift:
        return False
    names = ", ".join(d.filename.rsplit("/", 1)[-1] for d in drift[:3])
    verdict = patched_only(run)
    if verdict.ok:
        notes.append(f"code changed inside patched blocks ({', '.join(verdict.patches)}) "
                     f"since the recording ({names}): resuming under the new code")
        return True
    if not allow_drift:
        raise ResumeError(f"{run.timeline.path}: code changed since the recording outside "
                          f"patched blocks ({verdict.outside}); pass --allow-drift "
                          "(allow_drift=True) to resume anyway")
    notes.append(f"code changed since the recording ({names}); resuming anyway")
    return False


def _clock(when: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S")
