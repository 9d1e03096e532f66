"""``snapstate worker``: resume every paused run whose time or answer has come (issue 17).

One **pass** looks at the timelines it is given (files, or directories searched for
``*.snap``): each ``sleeping`` run not yet continued whose due time has passed is woken, and,
with an answers directory, each ``waiting`` run for which an answer file arrived is answered
(``ANSWERS/<run id or unique prefix>.json`` holds JSON, ``.txt`` text; the file is moved to
``ANSWERS/done/`` once used, or to ``ANSWERS/refused/`` with a ``.why`` beside it when the
wait's schema refused it). Every resume goes through ``durable.resume``, so the lease keeps
two workers (or a worker and a person) from continuing a run twice: a run another resumer
holds is skipped, not waited for. ``serve`` repeats passes until stopped.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..capture.answers import read_answer_file
from ..errors import SnapStateError
from ..store.leases import LeaseHeld
from ..store.locations import is_store_url, location_label
from ..trust.gate import open_timeline
from .resume import AlreadyContinued, AnswerRefused, resume

#: Seconds between passes of ``serve`` (``--interval``).
DEFAULT_INTERVAL = 5.0


@dataclass(frozen=True)
class Event:
    """One line of the worker's log: ``file``, ``run`` (id), ``action`` (``woke``,
    ``answered``, ``skipped``, ``refused``, ``failed``), ``detail`` (one line), ``result``
    (the resume's result dict, when it ran)."""

    file: str
    run: str
    action: str
    detail: str
    result: dict[str, Any] | None = None

    def line(self) -> str:
        """``2025-01-02 09:00:01 agent.snap 1a2b3c4d woke: continued as 5e6f7a8b (finished)``"""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        if not self.action:  # a summary line (``pending``)
            return f"{stamp} {self.detail}"
        return f"{stamp} {self.file} {self.run[:8]} {self.action}: {self.detail}"


def timeline_files(targets: Iterable[str | os.PathLike[str]]) -> list[Path | str]:
    """The timelines named by ``targets``: files as they are, directories searched
    (recursively) for ``*.snap``, ``postgresql://`` store URLs as given (a string). Raises
    ``SnapStateError`` for a target that does not exist."""
    out: list[Path | str] = []
    for target in targets:
        if is_store_url(target):
            out.append(os.fspath(target))
            continue
        path = Path(target)
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*.snap") if p.is_file()))
        elif path.exists():
            out.append(path)
        else:
            raise SnapStateError(f"{path}: no such file or directory")
    return list(dict.fromkeys(out))


def run_pass(files: list[Path | str], *, answers: Path | None = None, trust: bool = False,
             allow_drift: bool = False, log: Callable[[Event], None] | None = None
             ) -> list[Event]:
    """Resume, once, every due sleeping run and every answered waiting run in ``files``;
    return the events (each also handed to ``log`` as it happens)."""
    events: list[Event] = []

    def note(event: Event) -> None:
        events.append(event)
        if log is not None:
            log(event)

    for path in files:
        try:
            due, waiting = _paused(path)
        except SnapStateError as exc:
            note(Event(_label(path), "", "failed", str(exc)))
            continue
        for run_id in due:
            _one(path, run_id, "woke", {}, trust, allow_drift, note)
        if answers is None:
            continue
        for run_id in waiting:
            try:
                answer_file = _answer_file(answers, run_id)
            except SnapStateError as exc:  # two answers: a person decides which stands
                note(Event(_label(path), run_id, "refused", str(exc)))
                continue
            if answer_file is None:
                continue
            try:
                answer = _read_answer(answer_file)
            except SnapStateError as exc:
                note(Event(_label(path), run_id, "refused", str(exc)))
                _file_away(answer_file, answers / "refused", str(exc))
                continue
            used = _one(path, run_id, "answered", {"answer": answer}, trust, allow_drift,
                        note, answer_file=answer_file, answers=answers)
            if used:
                _file_away(answer_file, answers / "done")
    return events


def serve(files: Callable[[], list[Path | str]], *, answers: Path | None = None,
          trust: bool = False, allow_drift: bool = False, interval: float = DEFAULT_INTERVAL,
          once: bool = False, log: Callable[[Event], None] | None = None) -> None:
    """Run passes over ``files()`` (re-listed each pass) every ``interval`` seconds until
    interrupted; one pass when ``once`` (and, when it resumed nothing, one ``pending`` line
    handed to ``log`` as an event without file or run)."""
    while True:
        listed = files()
        events = run_pass(listed, answers=answers, trust=trust, allow_drift=allow_drift,
                          log=log)
        if once:
            if not events and log is not None:
                log(Event("", "", "", pending(listed)))
            return
        time.sleep(interval)


def pending(files: list[Path | str]) -> str:
    """One line on what is still paused in ``files`` once a pass resumed nothing:
    ``nothing due: 1 sleeping run (next due 2025-01-02 09:00:45), 2 waiting for an answer``
    (a file that cannot be read is left out: the pass has reported it)."""
    now = time.time()
    dues: list[float] = []
    waiting = 0
    for path in files:
        try:
            with open_timeline(path) as timeline:
                for run in timeline.runs:
                    if run.pause is None or run.continued_as:
                        continue
                    if run.status == "sleeping":
                        dues.append(float(run.pause.get("due") or 0))
                    elif run.status == "waiting":
                        waiting += 1
        except SnapStateError:
            continue
    parts = []
    if dues:
        soonest = min(dues)
        when = ("due now" if soonest <= now else "next due " + time.strftime(
            "%Y-%m-%d %H:%M:%S", time.localtime(soonest)))
        parts.append(f"{len(dues)} sleeping run{'s' if len(dues) != 1 else ''} ({when})")
    if waiting:
        parts.append(f"{waiting} waiting for an answer")
    return "nothing due: " + (", ".join(parts) if parts else "no paused runs")


def _paused(path: Path | str) -> tuple[list[str], list[str]]:
    """Ids of the due sleeping runs and of the waiting runs of ``path`` not yet continued."""
    now = time.time()
    due, waiting = [], []
    with open_timeline(path) as timeline:
        for run in timeline.runs:
            if run.pause is None or run.continued_as:
                continue
            if run.status == "sleeping" and float(run.pause.get("due") or 0) <= now:
                due.append(run.id)
            elif run.status == "waiting":
                waiting.append(run.id)
    return due, waiting


def _one(path: Path | str, run_id: str, action: str, given: dict[str, Any], trust: bool,
         allow_drift: bool, note: Callable[[Event], None], *, answer_file: Path | None = None,
         answers: Path | None = None) -> bool:
    """Resume one run and log it; True when it was continued."""
    try:
        result = resume(path, run=run_id, trust=trust, allow_drift=allow_drift,
                        capture_output=True, by="worker" if action == "woke" else None,
                        **given)
    except LeaseHeld as exc:
        note(Event(_label(path), run_id, "skipped", f"held by {exc.holder.describe()}"))
        return False
    except AlreadyContinued as exc:  # another worker's pass took it first: as a held lease
        note(Event(_label(path), run_id, "skipped", str(exc)))
        return False
    except AnswerRefused as exc:
        note(Event(_label(path), run_id, "refused", str(exc)))
        if answer_file is not None and answers is not None:
            _file_away(answer_file, answers / "refused", str(exc))
        return False
    except SnapStateError as exc:
        note(Event(_label(path), run_id, "failed", str(exc)))
        return False
    fork = result.get("fork") or {}
    pause = result.get("pause") or {}
    status = str(result.get("fork_status", result.get("status")))
    if pause.get("pause") == "wait":
        status = f"waiting for {pause.get('name')!r}"
    elif pause.get("pause") == "sleep":
        status = "sleeping until " + time.strftime("%Y-%m-%d %H:%M:%S",
                                                   time.localtime(float(pause.get("due", 0))))
    detail = (f"continued as {str(fork.get('run', '?'))[:8]} ({status})" if fork
              else str(result.get("message", "")))
    note(Event(_label(path), run_id, action, detail, result))
    return bool(fork)


def _answer_file(answers: Path, run_id: str) -> Path | None:
    """``ANSWERS/<prefix of run_id>.json|.txt``, or None. Raises ``SnapStateError`` naming
    them when more than one file answers the run (``72b90073.txt`` and ``72b9.json``): the
    worker used one and left the other without a word (helper-40); both stay, and the pass
    says so until one is removed."""
    if not answers.is_dir():
        return None
    found = sorted(candidate for candidate in answers.iterdir()
                   if candidate.suffix in (".json", ".txt") and candidate.is_file()
                   and len(candidate.stem) >= 4 and run_id.startswith(candidate.stem.lower()))
    if len(found) > 1:
        raise SnapStateError(f"{answers}: {len(found)} answers for run {run_id[:8]} ("
                             + ", ".join(p.name for p in found) + "); remove all but one")
    return found[0] if found else None


def _read_answer(path: Path) -> Any:
    """An answer file of the ``--answers-from`` directory; a text answer loses its final
    newline (``echo yes > RUN.txt``)."""
    answer = read_answer_file(path)
    return answer.rstrip("\n") if isinstance(answer, str) else answer


def _file_away(path: Path, folder: Path, why: str | None = None) -> None:
    try:
        folder.mkdir(exist_ok=True)
        target = folder / path.name
        shutil.move(str(path), str(target))
        if why is not None:
            target.with_name(target.name + ".why").write_text(why + "\n", encoding="utf-8")
    except OSError:
        pass  # left where it is: the next pass reports it again


def _label(location: Path | str) -> str:
    """A timeline as the log names it (a store URL without its password)."""
    return str(location_label(location))
