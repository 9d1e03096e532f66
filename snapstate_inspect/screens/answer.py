"""Answering a waiting run from the inspector (issue 17 point 6).

``a`` on a run that waits for an answer opens ``AnswerScreen``: the wait's prompt and schema,
and a line to type the answer (JSON when the wait's schema wants it, ``capture/answers.py``),
checked against the schema as it is submitted. Then the app suspends and the continuation
runs in the terminal (``snapstate_capture.durable.resume``: the run is replayed to its wait,
the answer journaled, the program goes on live); on return the file is re-read and the runs
tree opens on the new branch. Where the app cannot suspend (a headless test) the continuation
runs with its output captured. Like fork, it needs trust: the run signed with your key, or
``snapstate inspect --trust``.
"""

from __future__ import annotations

import json
from typing import Any

from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from snapstate_capture import Run, SnapStateError

from .. import keymap
from ..safe_text import plain
from .replay import REPLAY, _pause, select_in_runs_tree


class AnswerScreen(ModalScreen[Any]):
    """Type the answer to ``run``'s wait; dismisses with the answer (checked against the
    wait's schema) or with ``AnswerScreen.CANCEL``."""

    CANCEL = object()
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, run: Run) -> None:
        super().__init__()
        self.run = run
        self.pause = run.pause or {}

    def compose(self) -> ComposeResult:
        name, prompt = str(self.pause.get("name", "?")), str(self.pause.get("prompt") or "")
        schema = (self.pause.get("schema") or {}).get("json")
        with Vertical(id="answer-box", classes="dialog"):
            yield Label(plain(f"Run {self.run.id[:8]} ({self.run.name}) waits for {name!r}",
                              "bold"))
            if prompt:
                yield Static(plain(prompt), id="answer-prompt")
            if schema is not None:
                yield Static(plain("schema: " + json.dumps(schema), "dim"), id="answer-schema")
            yield Input(placeholder="your answer, then Enter (Esc: cancel)", id="answer-input")
            yield Label("", id="answer-error")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        from snapstate_capture.capture.answers import check_answer, parse_typed

        event.stop()
        spec = self.pause.get("schema")
        answer = parse_typed(event.value, spec)
        problem = check_answer(spec, answer)
        if problem is not None:
            self.query_one("#answer-error", Label).update(plain(f"refused: {problem}", "red"))
            return
        self.dismiss(answer)

    def action_cancel(self) -> None:
        self.dismiss(self.CANCEL)


def answer_wait(app: Any) -> None:
    """The ``answer_wait`` command: answer the current run's wait, then continue it."""
    run = app.current_run
    if run is None or run.status != "waiting":
        app.notify("this run does not wait for an answer (r: the runs tree marks the ones "
                   "that do)", title="Nothing to answer", severity="warning", timeout=6)
        return
    if run.continued_as:
        app.notify(f"run {run.id[:8]} was answered already: it continues as "
                   f"{run.continued_as[:8]}", title="Answered", severity="warning", timeout=6)
        return

    def chosen(answer: Any) -> None:
        if answer is not AnswerScreen.CANCEL:
            continue_with(app, run, answer)

    app.push_screen(AnswerScreen(run), chosen)


def continue_with(app: Any, run: Run, answer: Any) -> dict[str, Any] | None:
    """Resume ``run`` with ``answer`` in the terminal (the app suspended), then open the new
    branch in the runs tree. Returns the resume's result, or None when it failed (a toast
    says why)."""
    from snapstate_capture.durable.resume import resume

    trust = bool(getattr(app, "trust", False))
    path = run.timeline.path
    try:
        try:
            with app.suspend():
                result = resume(path, run=run.id, answer=answer, trust=trust, progress=True)
                _pause(result)
        except SuspendNotSupported:
            result = resume(path, run=run.id, answer=answer, trust=trust, capture_output=True)
    except SnapStateError as exc:
        app.notify(plain(str(exc)).plain, title="Cannot continue", severity="error", timeout=8)
        return None
    app.refresh_runs()
    created = result.get("fork")
    if created:
        app.switch_run(created["run"])
        main = app._main_screen()
        if main is not None:
            main.action_runs()
            app.call_after_refresh(select_in_runs_tree, app, created["run"])
    app.notify(plain(str(result.get("message", ""))).plain, title="Answered",
               severity="information")
    return result


keymap.register(keymap.Command(
    "answer_wait", "a", "Answer this wait…",
    "On a run waiting for an answer: type it, then the run continues live in the terminal as "
    "its continuation (a new branch in the runs tree).", REPLAY, run=answer_wait))
