"""The main screen: timeline, stack, source, variables, value detail, status bar, run plot.

It watches the app's ``selection`` and ``variable`` and keeps every panel in step. Keys come from
``keymap.COMMANDS`` (bound in ``__init__``), each calling ``app.run_command(id)``, which lands
in an ``action_<id>`` method for built-in commands (``inspector_actions.py``). Slow work runs
in worker threads: variable previews (a hostile preview can be megabytes), the run plot,
change searches.
"""

from __future__ import annotations

import os
import time
from typing import Any

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.worker import get_current_worker

from snapstate_capture import SnapStateError

from .. import keymap
from ..model.history import Selection
from ..model.trust_state import SYNC_TRUST_STEPS, trust_verdict
from ..model.values import REMOVED, SAME, SUBMITTED_FRAME, frame_changes, matching_frame
from ..safe_text import place, plain
from ..widgets.detail import DetailView
from ..widgets.footer import KeysFooter
from ..widgets.sparkline import RunPlot
from ..widgets.stack import StackView
from ..widgets.source import SourceView
from ..widgets.status import StatusBar
from ..widgets.timeline import TimelineView
from ..widgets.variables import VariablesView, tags
from .inspector_actions import InspectorActions

PLOT_BUCKETS = 200
PLOT_BUCKETS_PER_QUERY = 8  # 40,000 steps of a 1,000,000-step run: about 15 ms of SQLite
LOCK_PAUSE = 0.0003  # seconds: enough for a thread blocked on the reader's lock to wake


def collect_rows(loader, step, frame, previous, cancelled=None):
    """``(function, rows, extra)`` for the variables panel: each local's preview with its change
    mark against ``previous`` (the same frame one step earlier) and the earlier preview when it
    changed; the step's own values. None when ``cancelled()`` turns true. A frame of the
    code that submitted a pool call (``Frame.submitted``, kept without locals), or one
    following such a frame, has no marks: it is not the same frame's locals a step apart."""
    if previous is not None and (frame.submitted or previous.submitted):
        previous = None
    marks = frame_changes(frame, previous)
    rows = []
    for name, mark in marks.items():
        if cancelled is not None and cancelled():
            return None
        if mark == REMOVED:
            rows.append((name, loader.load(previous.locals[name]), mark, None))
            continue
        before = None
        if mark != SAME and previous is not None and name in previous.locals:
            before = loader.load(previous.locals[name])
        rows.append((name, loader.load(frame.locals[name]), mark if previous else None,
                     before))
    extra = [(name, loader.load(value)) for name, value in step.extra.items()]
    return frame.function, rows, extra
DETAIL_LIMIT = 20_000


class InspectorScreen(InspectorActions, Screen[None]):
    """The inspector's main screen (see module docstring)."""

    AUTO_FOCUS = "#timeline"

    def __init__(self) -> None:
        super().__init__()
        for command in keymap.COMMANDS:
            # Bindings built from the command table, so extensions registered before the screen
            # is made get keys too (Textual's own App.bind does the same).
            self._bindings.bind(command.keys, f"app.command('{command.id}')",
                                command.title, show=command.footer,
                                key_display=command.key_display.split(",")[0])
        self._loaded_for: tuple | None = None
        self._plot_for = None  # a run whose plot waits for the panels to be complete
        self._awaiting_variables = False
        self._was_complete = False  # the panels were drawn complete at least once
        self._detail_shown: tuple | None = None
        self._note = ""
        #: where ``say`` said its note: it goes when another step is shown ("no later
        #: exception" stayed on after ``g 0``)
        self._noted_at: Any = None
        self._trust: dict[str, str] = {}  # run id -> ``status.TRUST_LABELS`` key

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield TimelineView(id="timeline")
                yield RunPlot([], id="plot")
            with Vertical(id="right"):
                with Horizontal(id="upper"):
                    yield StackView(id="stack")
                    yield SourceView(id="source")
                with Horizontal(id="lower"):
                    yield VariablesView(id="variables")
                    yield DetailView(id="detail")
        yield StatusBar(id="status")
        yield KeysFooter()

    #: Below this many columns the screen is ``narrow`` (inspector.tcss): the timeline gives
    #: up width to the stack, source, variables and value panes.
    NARROW_COLUMNS = 120

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < self.NARROW_COLUMNS, "narrow")

    # -- setup -----------------------------------------------------------------------------
    def on_mount(self) -> None:
        app = self.app
        self.query_one("#timeline").border_title = "Timeline"
        self.query_one("#stack").border_title = "Stack"
        self.query_one("#source").border_title = "Source"
        self.query_one("#variables").border_title = "Variables"
        self.query_one("#detail").border_title = "Value"
        self.watch(app, "selection", self._on_selection, init=False)
        self.watch(app, "variable", self._on_variable, init=False)
        self.watch(app, "follow", lambda _: self._update_status(), init=False)
        if app.current_run is None:
            self._note = "this file holds no runs"
            self.query_one(VariablesView).show_loading("(the file holds no runs)")
            self._update_status()
            self.call_after_refresh(self._panels_complete)
            return
        self._show_run()
        app.selection = app.initial_selection()
        self.set_interval(0.5, self._poll)

    def _show_run(self) -> None:
        app = self.app
        self.query_one(TimelineView).set_run(app.current_run, app.step_count())
        self.query_one(TimelineView).set_hits(frozenset(app.search.hits))
        # The plot scans the whole run: it starts once the panels show the selection, so at
        # start-up it does not compete with the first screen (see ``_panels_complete``).
        self._plot_for = app.current_run

    def _panels_complete(self) -> None:
        """The panels were drawn with the selection's variables (or the reason there are
        none): start what waited for that — the pending run plot, and at start-up the app's
        work between keys (``SnapStateApp.first_screen_shown``)."""
        run, self._plot_for = self._plot_for, None
        if run is not None:
            self._load_plot(run)
        if not self._was_complete:
            self._was_complete = True
            self.app.first_screen_shown()

    # -- reacting to the selection ---------------------------------------------------------
    def _on_selection(self, selection: Selection | None) -> None:
        if selection is None:
            return
        if self._noted_at is not None and self._noted_at != selection.place:
            self._note, self._noted_at = "", None
        with self.app.batch_update():  # one repaint for every panel
            self._show_selection(selection)
        if not self._awaiting_variables and (self._plot_for is not None
                                             or not self._was_complete):
            self.call_after_refresh(self._panels_complete)

    def _show_selection(self, selection: Selection) -> None:
        app = self.app
        timeline = self.query_one(TimelineView)
        if timeline._run is not app.current_run:
            self._show_run()
        timeline.cursor = max(selection.step, 0)
        self._update_status()
        try:
            step = app.current_step()
        except (IndexError, SnapStateError) as exc:
            self._show_error(f"cannot read step {selection.step}: {exc}")
            return
        if step is None:
            self.query_one(StackView).show((), 0)
            self.query_one(SourceView).show(None, (), "", 0)
            self.query_one(VariablesView).show_loading("(this run has no steps)")
            return
        try:
            frames = step.frames
        except SnapStateError as exc:
            self._show_error(f"cannot read the stack of step {step.index}: {exc}")
            return
        position = len(frames) - 1
        if selection.frame is not None and selection.frame < len(frames):
            position = selection.frame
        self.query_one(StackView).show(frames, position, selection.step)
        if not frames:
            self.query_one(SourceView).show(None, (), "", 0)
            self.query_one(VariablesView).show(0, "?", [], self._extra_rows_quick(step))
            return
        frame = frames[position]
        try:
            source = frame.source
        except SnapStateError:
            source = ()
        source_view = self.query_one(SourceView)
        source_view.show(frame.source_hash, source, frame.filename, frame.lineno)
        source_view.border_title = Text.assemble(
            "Source ", plain(place(os.path.basename(frame.filename), frame.lineno), "dim"))
        self.query_one(VariablesView).border_title = Text.assemble(
            "Variables ", plain(frame.function, "dim"))
        self._load_variables(selection, position)

    def _extra_rows_quick(self, step) -> list:
        return [(name, self.app.loader.load(value)) for name, value in step.extra.items()]

    def _show_error(self, message: str) -> None:
        self._awaiting_variables = False
        self.call_after_refresh(self._panels_complete)
        self._note = message
        self.query_one(VariablesView).show_loading(message)
        self._update_status()

    def _load_variables(self, selection: Selection, position: int) -> None:
        """Fill the variables panel: at once when the previews are small or cached (one frame
        drawn per key), else in a worker thread (a hostile preview can be megabytes)."""
        app = self.app
        try:
            step = app.current_step()
            frame = step.frames[position]
            previous = matching_frame(app.current_run, selection.step - 1, position,
                                      frame.function)
            values = [*frame.locals.values(), *step.extra.values(),
                      *(previous.locals.values() if previous is not None else ())]
            quick = app.loader.quick(values)
        except (IndexError, SnapStateError) as exc:
            self._show_error(f"cannot read step {selection.step}: {exc}")
            return
        if quick:
            self.workers.cancel_group(self, "variables")
            self._awaiting_variables = False
            self._apply_variables(selection, position, *collect_rows(app.loader, step, frame,
                                                                     previous),
                                  submitted=frame.submitted)
        else:
            self.query_one(VariablesView).show_loading("loading large values…")
            self._awaiting_variables = True
            self._variables_worker(selection, position)

    @work(thread=True, exclusive=True, group="variables")
    def _variables_worker(self, selection: Selection, position: int) -> None:
        app = self.app
        worker = get_current_worker()
        try:
            step = app.current_run.steps[selection.step]
            frame = step.frames[position]
            previous = matching_frame(app.current_run, selection.step - 1, position,
                                      frame.function)
            with app.activity.asked_for():  # the key that moved here: no reason to wait
                result = collect_rows(app.loader, step, frame, previous,
                                      cancelled=lambda: worker.is_cancelled)
        except (IndexError, SnapStateError) as exc:
            app.call_from_thread(self._show_error, f"cannot read step {selection.step}: {exc}")
            return
        if result is not None and not worker.is_cancelled:
            app.call_from_thread(self._apply_variables, selection, position, *result,
                                 submitted=frame.submitted)

    def _apply_variables(self, selection: Selection, position: int, function: str,
                         rows: list, extra: list, *, submitted: bool = False) -> None:
        if not self.is_attached:
            return
        if self._awaiting_variables:  # a worker's result: the screen is complete once drawn
            self._awaiting_variables = False
            self.call_after_refresh(self._panels_complete)
        if self.app.selection != selection:
            return
        chosen = self.app.variable
        select = chosen.name if chosen is not None and chosen.function == function else None
        tree = self.query_one(VariablesView)
        step_value = self.app.search.step_value_at(selection.step)
        data = tree.show(position, function, rows, extra, select=select, announce=False,
                         select_step_value=step_value,
                         empty=SUBMITTED_FRAME if submitted else None)
        if data is not None and data.key is not None:
            self.app.variable = data.key
        self._show_detail(data.key if data else None, data.preview if data else None)
        self._loaded_for = (selection, position)

    def _on_variable(self, key: Any) -> None:
        self._update_status()

    def on_variables_view_selected(self, event: VariablesView.Selected) -> None:
        if event.key is not None:
            self.app.variable = event.key
        self._show_detail(event.key, event.preview)

    def _show_detail(self, key: Any, preview: dict[str, Any] | None) -> None:
        shown = (key, None if preview is None else (preview.get("type"), preview.get("repr"),
                                                    preview.get("len")))
        if shown == self._detail_shown:
            return
        self._detail_shown = shown
        detail = self.query_one("#detail", DetailView)
        if preview is None:
            detail.update("")
            return
        text = Text()
        if key is not None:
            text.append_text(plain(key.display, "bold"))
            text.append("\n")
        text.append_text(plain(str(preview.get("type", "?")), "cyan"))
        size = preview.get("len")
        if isinstance(size, int):
            text.append(f"  len {size:,}", style="dim")
        text.append_text(tags(preview))
        text.append("\n")
        body = str(preview.get("repr", ""))
        if len(body) > DETAIL_LIMIT:
            body = body[:DETAIL_LIMIT] + f"… ({len(body) - DETAIL_LIMIT:,} more characters)"
        text.append_text(plain(body, single_line=False))
        detail.update(text)

    def _update_status(self) -> None:
        app = self.app
        run = app.current_run
        sel = app.selection
        status = self.query_one(StatusBar)
        if run is None:
            status.update_status(file=str(app.reader.path), run_name="-", run_id="", status="-",
                                 step=0, count=0,
                                 trust="flag" if app.reader.trust or getattr(app, "trust", False)
                                 else "untrusted", follow=False,
                                 note=self._note)
            return
        note = self._note
        if app.search.query:
            note = (note + "  " if note else "") + app.search.summary()
        if app.variable is not None:
            note = (note + "  " if note else "") + f"var {app.variable.display}"
        status.update_status(file=os.path.basename(str(app.reader.path)), run_name=run.name,
                             run_id=run.id, status=run.status,
                             step=sel.step if sel else 0, count=self.query_one(TimelineView).count,
                             trust=self._trust_of(run), follow=app.follow, note=note)

    def _trust_of(self, run: Any) -> str:
        """The status bar's trust state of ``run``: ``--trust``, else its signature's verdict,
        checked once per run, in a worker for a long run (verifying reads all its steps)."""
        if self.app.reader.trust or getattr(self.app, "trust", False):  # ``inspect --trust``
            return "flag"
        state = self._trust.get(run.id)
        if state is None and len(run.steps) <= SYNC_TRUST_STEPS:
            state = self._trust[run.id] = trust_verdict(run)
        elif state is None:
            state = self._trust[run.id] = "checking"
            self._check_trust(run)
        return state

    @work(thread=True, group="trust")
    def _check_trust(self, run: Any) -> None:
        self._trust[run.id] = trust_verdict(run)
        self.app.call_from_thread(self._trust_checked)

    def _trust_checked(self) -> None:
        if self.query(StatusBar):  # none once the app is closing
            self._update_status()


    def say(self, message: str) -> None:
        """A short note in the status bar (and a toast), e.g. "no next exception", shown until
        another step is."""
        self._note = message
        sel = self.app.selection
        self._noted_at = sel.place if sel is not None else None
        self._update_status()
        self.notify(message, timeout=2)

    # -- panel messages --------------------------------------------------------------------
    def on_timeline_view_move(self, event: TimelineView.Move) -> None:
        app = self.app
        sel = app.selection
        if sel is None:
            return
        count = app.step_count()
        if event.target is not None:
            target = count - 1 if event.target < 0 else event.target
            app.go(target, jump=abs(target - sel.step) > 1)
        else:
            app.go(min(max(sel.step + event.delta, 0), count - 1), jump=abs(event.delta) > 1)

    def on_stack_view_frame_chosen(self, event: StackView.FrameChosen) -> None:
        sel = self.app.selection
        if sel is not None and event.step == sel.step:
            self.app.select_frame(event.position)

    def on_run_plot_jump(self, event: RunPlot.Jump) -> None:
        count = self.app.step_count()
        if count:
            self.app.go(min(int(event.fraction * count), count - 1), jump=True)

    # -- background ------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="plot")
    def _load_plot(self, run) -> None:
        """Locals changed per slice of the run, ``PLOT_BUCKETS_PER_QUERY`` slices per query: few
        round trips (after each one this thread must win the GIL back from busy threads), each
        short enough that a UI read waiting for the reader's lock is not held up for long;
        a short pause after each query lets a waiting read take the lock (a thread that releases
        and retakes a lock at once would otherwise starve it)."""
        worker = get_current_worker()
        count = len(run.steps)
        buckets = min(PLOT_BUCKETS, max(count, 1))
        data: list[float] = []
        for first in range(0, buckets, PLOT_BUCKETS_PER_QUERY):
            self.app.activity.step_aside(lambda: worker.is_cancelled)
            if worker.is_cancelled:
                return
            last = min(first + PLOT_BUCKETS_PER_QUERY, buckets)
            start, stop = first * count // buckets, last * count // buckets
            try:
                totals = (run.steps.changed_totals(start, stop, last - first) if stop > start
                          else [0] * (last - first))
            except SnapStateError as exc:  # a damaged file: say so, keep the app up
                self.app.call_from_thread(self.say, f"no plot: {exc}")
                return
            data.extend(float(total) for total in totals)
            time.sleep(LOCK_PAUSE)
        self.app.call_from_thread(self._apply_plot, data)

    def _apply_plot(self, data: list[float]) -> None:
        plots = self.query(RunPlot)  # none once the app is closing: the worker came too late
        if plots:  # nothing changed anywhere (or no steps): no bars, not a flat full row
            plots.first().data = data if any(data) else []

    def _poll(self) -> None:
        """Live follow: pick up new steps (and the run's status) while recording goes on."""
        app = self.app
        if not app.follow or app.current_run is None:
            return
        try:
            app.refresh_runs()
            count = app.step_count()
        except SnapStateError:
            return
        timeline = self.query_one(TimelineView)
        if count != timeline.count:
            timeline.set_count(count)
            app.go(count - 1)
        self._update_status()
