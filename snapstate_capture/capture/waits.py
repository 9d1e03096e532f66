"""Durable waits: ``wait_for`` a person, ``sleep_until`` a time, ``patched`` code (issue 17).

A wait is a point in the program where the run may stop and be continued later, in another
process, on another machine (DESIGN.md "Durable waits"). At a wait the recorder appends a
``waiting`` step (the stack, the locals, the wait's name as label, its prompt or reason), then
the wait's outcome is an effect: the answer (or the time it woke) is journaled as the result
of an ``effect`` step right after it, and served from the journal whenever the run is
replayed. When no outcome is at hand — nobody answered yet, the due time is far — the run
ends ``waiting`` or ``sleeping``: the pause (name, prompt, schema, or the due time) is stored
as the run's end, one line on stderr says how to go on, and the program stops with
``SystemExit(EXIT_PAUSED)`` (no traceback). ``snapstate resume`` / ``snap.resume`` replays
the run to its ``waiting`` step and hands the outcome to the same wait in the new process,
which from there runs live as the continuation run.

Outside a ``record`` block (or with ``SNAPSTATE_DISABLE=1``) there is nothing to resume: a
wait asks on the terminal (``input``) and validates the answer there; without a terminal it
raises ``WaitOutsideRecord``. A sleep just sleeps.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import threading
import time as _time
from dataclasses import dataclass
from typing import Any

from ..errors import SnapStateError
from .answers import wants_json
from .effects import _inside, begin_call, end_call, user_frame
from .recorder import active_recorder

#: Exit status of a program whose run paused (``waiting`` or ``sleeping``): 75, ``EX_TEMPFAIL``
#: of sysexits.h — "not done; try again later". ``snapstate resume`` exits with it too when
#: the continuation pauses again.
EXIT_PAUSED = 75
#: A sleep due within this many seconds is slept in the process; a longer one pauses the run
#: (``SNAPSTATE_HOLD_SECONDS`` overrides).
DEFAULT_HOLD_SECONDS = 30.0
HOLD_ENV = "SNAPSTATE_HOLD_SECONDS"

_real_sleep = _time.sleep
_wall = _time.time


class Paused(SystemExit):
    """Ends the program when its run paused at a wait: a ``SystemExit`` with code
    ``EXIT_PAUSED`` (so no traceback), carrying the stored ``pause`` dict."""

    def __init__(self, pause: dict[str, Any]) -> None:
        super().__init__(EXIT_PAUSED)
        self.pause = pause


class WaitOutsideRecord(SnapStateError):
    """``wait_for`` was called outside a ``record`` block with no terminal to ask on."""


class WaitNotStored(SnapStateError):
    """A wait or long sleep could not pause the run: its recording had stopped (a full disk:
    the line the recorder wrote then says why), so nothing could resume it. Raised into the
    program instead of exiting ``EXIT_PAUSED``, which would say a person will be asked."""


@dataclass(frozen=True)
class Resumption:
    """What a resume hands to the wait it stopped at: the outcome ``value`` (the answer, or
    None for a sleep) and ``by`` (``{"user", "login", "host", "at"}``: who gave it, when)."""

    value: Any
    by: dict[str, Any]


def hold_seconds() -> float:
    """Seconds a sleep may block the process before it pauses the run instead."""
    try:
        return max(0.0, float(os.environ.get(HOLD_ENV, DEFAULT_HOLD_SECONDS)))
    except ValueError:
        return DEFAULT_HOLD_SECONDS


# -- schemas -----------------------------------------------------------------------------------
def schema_spec(schema: Any) -> dict[str, Any] | None:
    """The stored form of a wait's ``schema``: ``{"json": JSON-schema, "model": "mod:Qual"}``.

    ``schema`` is None, a JSON-schema ``dict`` (stored as it is), or a pydantic model class
    (stored by import path, with the JSON schema pydantic derives from it when it can).
    Raises ``TypeError`` for anything else, or a dict that is not JSON.
    """
    if schema is None:
        return None
    if isinstance(schema, dict):
        try:
            json.dumps(schema)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"wait_for: schema must be JSON ({exc})") from None
        return {"json": schema, "model": None}
    if isinstance(schema, type) and callable(getattr(schema, "model_validate", None)):
        derived = None
        try:
            derived = schema.model_json_schema()  # the user's model, asked by the user
            json.dumps(derived)
        except Exception:  # noqa: BLE001 - then only the resumed program can check answers
            derived = None
        return {"json": derived, "model": f"{schema.__module__}:{schema.__qualname__}"}
    raise TypeError("wait_for: schema must be None, a JSON-schema dict or a pydantic model "
                    f"class, not {type(schema).__name__}")


def validate_in_program(schema: Any, answer: Any) -> tuple[Any, str | None]:
    """Check ``answer`` against a pydantic model ``schema`` in the program's own process:
    ``(the validated model, None)`` or ``(None, reason)``. Other schemas were checked by the
    answering process (``capture/answers.py``): the answer is returned as it is."""
    if isinstance(schema, type) and callable(getattr(schema, "model_validate", None)):
        try:
            return schema.model_validate(answer), None
        except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError: the reason
            return None, " ".join(str(exc).split())
    return answer, None


# -- the waits ---------------------------------------------------------------------------------
def wait_for(name: str, *, prompt: str = "", schema: Any = None) -> Any:
    """Wait for an answer named ``name``; return it.

    Inside a ``record`` block: the first time, the run ends ``waiting`` (``snapstate waiting``
    lists it with ``prompt``) and the program exits with ``EXIT_PAUSED`` after one line on
    stderr; ``snapstate resume FILE --answer …`` continues it here, in a new process, and the
    answer is returned. On replay the recorded answer is returned. ``schema`` (a JSON-schema
    dict or a pydantic model class) is checked before the program sees an answer: a bad one is
    refused with the reason and nothing is recorded; with a model class the answer returned is
    the validated model. Raises ``TypeError`` for a bad ``name`` or ``schema``; outside a
    ``record`` block with no terminal, ``WaitOutsideRecord``.
    """
    if not isinstance(name, str) or not name:
        raise TypeError("wait_for: name must be a non-empty string")
    prompt = str(prompt)
    spec = schema_spec(schema)
    recorder = active_recorder()
    if recorder is None or _inside.get():
        return _ask_here(name, prompt, schema, spec)
    frame = user_frame(sys._getframe(1))
    pause = {"pause": "wait", "name": name, "prompt": prompt, "schema": spec}
    return _pause_point(recorder, frame, name, {"prompt": prompt}, pause, schema)


def sleep_until(when: Any, *, reason: str = "") -> float:
    """Sleep until ``when`` (epoch seconds, or a ``datetime``: naive means local time); return
    the wall-clock time it woke at.

    Inside a ``record`` block a sleep due within ``hold_seconds()`` sleeps in the process;
    a longer one ends the run ``sleeping`` with its due time and the program exits with
    ``EXIT_PAUSED``; ``snapstate worker`` resumes it once it is due. On replay nothing sleeps:
    the recorded wake-up is served. Raises ``TypeError`` for a ``when`` of another type.
    """
    due = _epoch(when)
    reason = str(reason)
    recorder = active_recorder()
    if recorder is None or _inside.get():
        _sleep_to(due)
        return _wall()
    frame = user_frame(sys._getframe(1))
    pause = {"pause": "sleep", "name": "sleep_until", "reason": reason, "due": due}
    return _pause_point(recorder, frame, "sleep_until", {"reason": reason}, pause, None)


def patched(patch_id: str) -> bool:
    """True where the code of patch ``patch_id`` may run: live, and when replaying a run
    recorded with it; False when replaying steps recorded before the patch existed.

    ``if snap.patched("notify-v2"): new() else: old()`` lets a run that waited under the old
    code resume under the new one: its recorded steps replay through ``old()``, and from the
    resume on ``new()`` runs. A live decision is kept in the run's effect journal (no step), so
    a later replay takes the same branch. Outside ``record`` it is True.
    """
    if not isinstance(patch_id, str) or not patch_id:
        raise TypeError("patched: the patch id must be a non-empty string")
    recorder = active_recorder()
    if recorder is None or _inside.get():
        return True
    decide = getattr(recorder, "patch_marker", None)
    if decide is None:
        return True
    try:
        return bool(decide(patch_id, user_frame(sys._getframe(1))))
    except Exception:  # noqa: BLE001 - a marker that cannot be kept: the live answer
        return True


# -- machinery ---------------------------------------------------------------------------------
def _unanswered(name: str) -> None:  # the "function" of a wait's effect: only keyed
    return None


def _pause_point(recorder: Any, frame: Any, name: str, extra: dict[str, Any],
                 pause: dict[str, Any], schema: Any) -> Any:
    """The ``waiting`` step, then the outcome as an effect: served (replay), handed over (a
    resume stopped here), slept (a short sleep) or, failing all, the run pauses."""
    index = recorder.capture("waiting", frame, label=name, extra=extra)
    given: Resumption | None = None
    take = getattr(recorder, "take_resumption", None)
    if take is not None:
        given = take(name, pause, schema)  # a resume at this step: the recorder goes live
    call = begin_call(recorder, name, _unanswered, (), {"name": name}, frame)
    if call is None:  # could not be keyed: nothing to journal it under
        if given is not None:
            return given.value
        _pause(recorder, pause, index)
    if not call.served:
        if given is None and pause["pause"] == "sleep" and (
                pause["due"] - _wall() <= hold_seconds()):
            _sleep_to(pause["due"])
            given = Resumption(_wall(), {})
        if given is None:
            _pause(recorder, pause, index)
        assert given is not None
        value = given.value
        if pause["pause"] == "sleep":
            value = _wall() if value is None else value
        call.value, call.outcome, call.by = value, "return", given.by or None
    return end_call(recorder, call)


def _pause(recorder: Any, pause: dict[str, Any], index: int | None) -> None:
    """End the run ``waiting``/``sleeping`` with ``pause`` stored, say so, stop the program."""
    stored = {**pause, "step": index, "at": _wall()}
    if not recorder.pause(stored):
        from ..store.locations import location_label

        what = f"wait {pause['name']!r}" if pause["pause"] == "wait" else "sleep_until"
        raise WaitNotStored(f"{location_label(recorder.path)}: {what} could not pause the run: "
                            "its recording had stopped (see the line above); nothing was "
                            "paused and nothing can resume it")
    _say(recorder, stored)
    if threading.current_thread() is not threading.main_thread():
        # SystemExit would end this thread only; the rest of the program must stop too.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(EXIT_PAUSED)
    raise Paused(stored)


def _say(recorder: Any, pause: dict[str, Any]) -> None:
    run = (recorder.run_id or "")[:8]
    from ..store.locations import location_label

    path = location_label(recorder.path)  # a store URL without its password
    if pause["pause"] == "wait":
        prompt = _one_line(pause.get("prompt") or "")
        head = (f"snapstate: {path}: run {run} is waiting for {pause['name']!r}"
                + (f" ({prompt})" if prompt else ""))
        how = (f"answer with: snapstate resume {path} --run {run} "
               + ("--answer-json JSON" if wants_json(pause.get("schema")) else "--answer TEXT"))
    else:
        due = dt.datetime.fromtimestamp(pause["due"]).strftime("%Y-%m-%d %H:%M:%S")
        reason = _one_line(pause.get("reason") or "")
        head = (f"snapstate: {path}: run {run} is sleeping until {due}"
                + (f" ({reason})" if reason else ""))
        how = f"`snapstate worker {path}` resumes it then"
    line = f"{head}; {how}"
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr may be closed
        pass


def _one_line(text: str, limit: int = 100) -> str:
    first = "".join(c if c.isprintable() else " " for c in text.strip().splitlines()[0]) \
        if text.strip() else ""
    return first if len(first) <= limit else first[:limit - 1] + "…"


def _epoch(when: Any) -> float:
    if isinstance(when, dt.datetime):
        return when.timestamp()
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        return float(when)
    raise TypeError("sleep_until: when must be epoch seconds or a datetime, not "
                    f"{type(when).__name__}")


def _sleep_to(due: float) -> None:
    while True:
        left = due - _wall()
        if left <= 0:
            return
        _real_sleep(min(left, 60.0))


def _ask_here(name: str, prompt: str, schema: Any, spec: dict[str, Any] | None) -> Any:
    """No run to pause: ask on the terminal until an answer passes the schema."""
    if not (sys.stdin and sys.stdin.isatty()):
        raise WaitOutsideRecord(f"wait_for({name!r}) outside a record block needs a terminal "
                                "to ask on (inside one, the run waits for `snapstate resume`)")
    from .answers import check_answer, parse_typed

    while True:
        typed = input(f"{prompt or name}: ")
        answer = parse_typed(typed, spec)
        problem = check_answer(spec, answer)
        if problem is None:
            value, problem = validate_in_program(schema, answer)
            if problem is None:
                return value
        print(f"answer refused: {problem}", file=sys.stderr)
