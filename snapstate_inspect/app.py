"""``SnapStateApp``: the inspector. It is given an open timeline reader and never opens files.

State the screens share lives here as reactive attributes: ``selection`` (run, step, frame) and
``variable`` (the selected ``VariableKey``), plus ``follow``. Screens and widgets watch them.
Navigation goes through ``go``; jumps (anything but next/previous) are recorded for back/forward.

Extending (issues 8 and 9): add a screen class to ``screens.SCREENS`` and/or register a
``keymap.Command`` with ``run=handler``; the handler gets this app and can read ``app.reader``,
``app.other`` (the second file given on the command line), ``app.current_run``,
``app.current_step()``,
``app.selection`` and ``app.variable``, and move with ``app.go``. Every registered command gets
a key binding on the main screen, a help entry and a command-palette entry.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from textual import events, work
from textual.app import App, SystemCommand
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import get_current_worker

from snapstate_capture import NotFoundError, Run, SnapStateError, Step, Timeline
from snapstate_capture.store.locations import is_store_url

from . import keymap
from .idle_gc import CHECK_SECONDS, IdleCollector
from .model.background import Activity
from .model.history import History, Selection
from .model.navigation import Navigator
from .model.runs import step_in_other_run
from .model.search import iter_search
from .model.search_state import SearchState
from .model.var_history import Progress
from .model.values import PreviewLoader, VariableKey
from .screens import SCREENS
from .screens.inspector import InspectorScreen

SEARCH_CHUNK = 1000  # steps per search chunk: ~8 ms of work on the bench's run
PROGRESS_SECONDS = 0.2  # how often a running search updates the status bar


class SnapStateApp(App[None]):
    """The time-travel inspector over ``reader`` (a ``snapstate_capture.Timeline``).

    ``other``: a second timeline to compare with (issue 8): the compare screen opens over the
    inspector at start. ``compare_run``: the run to compare with (id prefix; in ``other``, or
    in this file when there is no ``other``).
    ``run_id``: run to show first (unique prefix; default the last run). ``step``: first step
    shown (default 0; negative counts from the end). ``follow``: follow a live recording
    (default: on when the run is still ``running``).
    Raises ``NotFoundError`` for an unknown ``run_id``.
    """

    CSS_PATH = "inspector.tcss"
    TITLE = "SnapState"
    SCREENS = SCREENS

    # repaint=False: a reactive on the App repaints the whole screen when it changes by
    # default (App.refresh -> Screen.refresh). The panels watching these redraw themselves, so
    # a key repaints only what changed instead of every cell of the terminal.
    selection: reactive[Selection | None] = reactive(None, init=False, repaint=False)
    variable: reactive[VariableKey | None] = reactive(None, init=False, repaint=False)
    follow: reactive[bool] = reactive(False, init=False, repaint=False)

    def __init__(self, reader: Timeline, *, other: Timeline | None = None,
                 run_id: str | None = None, step: int | None = None,
                 follow: bool | None = None, compare_run: str | None = None) -> None:
        super().__init__()
        self.reader = reader
        self.other = other
        self.compare_run = compare_run  # issue 8: with `other`, opens the compare screen
        self.diff_mark: tuple[str, int] | None = None
        self.history = History()
        self.activity = Activity()  # background scans step aside while keys are pressed
        self.idle_gc = IdleCollector(self.activity)  # full collections between keys
        self._idle_timer = None  # ticks once the first screen is shown
        self.loader = PreviewLoader(activity=self.activity)
        self.search = SearchState()
        # Runs are read one at a time (a store may hold 100,000): the one shown, and those
        # switched to; ``runs`` reads the whole list only for a file's run tree.
        self._run: Run | None = _first_run(reader, run_id)
        self._runs = {self._run.id: self._run} if self._run is not None else {}
        self._start_step = step
        #: A store opened without ``--run`` shows its runs first (its newest run behind them).
        self._open_runs_first = not run_id
        self._follow_default = follow
        self._step_cache: tuple[tuple[str, int], Step] | None = None

    # -- state -----------------------------------------------------------------------------
    @property
    def current_run(self) -> Run | None:
        """The run on screen (None for a file without runs)."""
        return self._run

    @property
    def navigator(self) -> Navigator | None:
        return Navigator(self._run) if self._run is not None else None

    def step_count(self) -> int:
        return len(self._run.steps) if self._run is not None else 0

    def current_step(self) -> Step | None:
        """The selected ``Step`` (read once per selection; None without steps)."""
        sel = self.selection
        if sel is None or self._run is None or sel.step < 0:
            return None
        key = (sel.run_id, sel.step)
        if self._step_cache is not None and self._step_cache[0] == key:
            return self._step_cache[1]
        step = self._run.steps[sel.step]
        self._step_cache = (key, step)
        return step

    def initial_selection(self) -> Selection | None:
        if self._run is None:
            return None
        count = self.step_count()
        step = self._start_step or 0
        if step < 0:
            step += count
        step = min(max(step, 0), count - 1) if count else -1
        if self._follow_default is None:
            self.follow = self._run.status == "running"
        else:
            self.follow = self._follow_default
        return Selection(self._run.id, step)

    def go(self, step: int | None, *, jump: bool = False, frame: int | None = None) -> bool:
        """Select ``step`` of the current run (ignored when None or out of range).

        ``jump`` records the place left for back/forward. The frame position is kept when the
        new step has the same function there, else the innermost frame is selected.
        Returns True when the selection moved.
        """
        sel = self.selection
        if step is None or sel is None or self._run is None:
            return False
        count = self.step_count()
        if not 0 <= step < count:
            return False
        if frame is None and sel.frame is not None:
            frame = self._keep_frame(sel, step)
        if jump and step != sel.step:
            self.history.visit(sel.place)
        new = Selection(sel.run_id, step, frame)
        if new == sel:
            return False
        self.selection = new
        return True

    def _keep_frame(self, sel: Selection, step: int) -> int | None:
        try:
            old = self.current_step()
            frames = self._run.steps[step].frames if self._run else ()
        except (IndexError, SnapStateError):
            return None
        if old is None or sel.frame is None or sel.frame >= len(old.frames):
            return None
        if sel.frame < len(frames) and frames[sel.frame].function == old.frames[sel.frame].function:
            return sel.frame
        return None

    def select_frame(self, position: int) -> None:
        """Select the frame at ``position`` (0 = outermost) of the current step."""
        sel = self.selection
        if sel is not None and sel.frame != position:
            step = self.current_step()
            innermost = len(step.frames) - 1 if step is not None else -1
            if not 0 <= position <= innermost:
                return
            self.selection = Selection(sel.run_id, sel.step,
                                       None if position == innermost else position)

    def switch_run(self, run_id: str) -> None:
        """Show run ``run_id``, keeping the step position where it makes sense."""
        target = self.find_run(run_id)
        sel = self.selection
        if target is None or self._run is None or sel is None or target.id == self._run.id:
            return
        self.history.visit(sel.place)
        step = step_in_other_run(self._run, target, sel.step, len(target.steps))
        self._run = target
        self.stop_search()
        self.search = SearchState()
        self.selection = Selection(target.id, step)

    def visit(self, run_id: str, step: int) -> None:
        """Go to ``step`` of run ``run_id`` without recording history (back/forward use it)."""
        if self._run is not None and run_id != self._run.id:
            self._run = self.find_run(run_id) or self._run
        if self._run is not None:
            count = self.step_count()
            self.selection = Selection(self._run.id, min(step, count - 1) if count else -1)

    @property
    def on_store(self) -> bool:
        """Whether the reader is a shared store (``postgresql://``), not a file."""
        return is_store_url(str(self.reader.path))

    def refresh_runs(self) -> None:
        """Re-read the run on screen (its new steps, its status while recorded elsewhere);
        in a file, the whole run list too (new forks). A store's list is the runs screen's,
        read a page at a time."""
        if self.on_store:
            fresh = self.reader.reload_run(self._run.id) if self._run is not None else None
            self._runs = {fresh.id: fresh} if fresh is not None else {}
            if fresh is not None:
                self._run = fresh
            return
        self.reader.refresh()
        self._runs = {run.id: run for run in self.reader.runs}
        if self._run is not None and self._run.id in self._runs:
            self._run = self._runs[self._run.id]

    def find_run(self, run_id: str) -> Run | None:
        """Run ``run_id`` (a whole id): known already, or read from the reader; None if absent."""
        run = self._runs.get(run_id)
        if run is None:
            try:
                run = self.reader.reload_run(run_id)
            except SnapStateError:
                run = None
            if run is not None:
                self._runs[run.id] = run
        return run

    @property
    def runs(self) -> list[Run]:
        """Every run of the reader, oldest first (read whole: a file's run tree, comparisons)."""
        return list(self.reader.runs)

    # -- search (runs in the background; the dialog and status bar show it) -----------------
    @property
    def search_hits(self) -> list[int]:
        """Step indexes of the current search's hits so far (ascending)."""
        return self.search.hits

    def start_search(self, query: str) -> None:
        """Search the current run for ``query`` in a worker thread (stops the previous one)."""
        self.stop_search()
        if self._run is None:
            return
        self.search = SearchState(query=query, total=self.step_count())
        self._search_worker(self._run, self.search)

    def stop_search(self) -> None:
        """Stop the running search (its hits so far are kept)."""
        if self.search.running:
            self.search.stopped = True
        self.workers.cancel_group(self, "search")
        self._search_changed()

    @work(thread=True, exclusive=True, group="search")
    def _search_worker(self, run: Run, state: SearchState) -> None:
        """Small chunks (a few ms each) with ``activity.pause`` between them, so a key never
        waits long for the interpreter; progress reaches the screen a few times a second."""
        worker = get_current_worker()

        def cancelled() -> bool:
            return worker.is_cancelled or state.stopped

        since = time.monotonic()  # keys after the one that started the search
        shown = 0.0
        try:
            for item in iter_search(run, state.query, loader=self.loader, chunk=SEARCH_CHUNK):
                if cancelled():
                    return
                if isinstance(item, Progress):
                    state.done = item.done
                    if time.monotonic() - shown >= PROGRESS_SECONDS:
                        self.call_from_thread(self._search_changed)
                        shown = time.monotonic()
                    self.activity.pause(cancelled, since)
                else:
                    with state.lock:
                        for hit in item:
                            state.hits.append(hit.step)
                            state.where[hit.step] = hit.where
                            if hit.frame is not None and hit.name is not None:
                                state.locals_at[hit.step] = (hit.frame, hit.name)
        except SnapStateError as exc:  # a damaged file: keep the hits found, say why it stopped
            self.call_from_thread(self.notify, f"search stopped: {exc}", severity="error")
        state.finished = True
        self.call_from_thread(self._search_changed)

    def _search_changed(self) -> None:
        for screen in self.screen_stack:
            refresh = getattr(screen, "refresh_hits", None)
            if refresh is not None:
                refresh()

    # -- input ---------------------------------------------------------------------------
    async def on_event(self, event: events.Event) -> None:
        """Keys and clicks tell ``activity`` the UI is in use (background scans step aside)."""
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollDown,
                              events.MouseScrollUp)):
            self.activity.touch()
        await super().on_event(event)

    # -- commands --------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        """The inspector's main screen is the first screen: Textual's empty default screen is
        never composed, drawn and then covered (start-up time)."""
        return InspectorScreen()

    def on_mount(self) -> None:
        self.idle_gc.start()
        if self.other is not None or self.compare_run:
            from .screens.diff_commands import open_comparison

            open_comparison(self)
        elif self.on_store and self._open_runs_first:
            self.call_after_refresh(self.run_command, "runs")

    def first_screen_shown(self) -> None:
        """The main screen was drawn complete for the first time (it calls this): start the
        idle-time collections. Before that the app is not idle, only waiting — e.g. for a
        worker decoding a huge preview of the first step — and a full collection then (100 ms
        and more with such a preview half decoded) delays the first screen."""
        if self._idle_timer is None:
            self._idle_timer = self.set_interval(CHECK_SECONDS, self.idle_gc.tick)

    def on_unmount(self) -> None:
        self.idle_gc.stop()

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Textual's notification, always as plain text (``markup`` is ignored): messages carry
        file paths, run names, error text and commands such as ``pip install
        'snapstate[crypto]'``, whose ``[crypto]`` Textual took for a markup tag and dropped
        (a newcomer's "Cannot fork" told them to ``pip install 'snapstate'``)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def run_command(self, command_id: str) -> None:
        """Run the registered command ``command_id`` (palette entries and bindings use this)."""
        command = keymap.find(command_id)
        if command is None:
            return
        if command.run is not None:
            command.run(self)
            return
        target = self._main_screen()
        handler = getattr(target, f"action_{command_id}", None) if target else None
        if handler is not None:
            handler()

    def action_command(self, command_id: str) -> None:
        """Textual action ``app.command('id')``: what the bindings call."""
        self.run_command(command_id)

    def _main_screen(self) -> InspectorScreen | None:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, InspectorScreen):
                return screen
        return None

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for command in keymap.COMMANDS:
            if command.id == "palette":
                continue
            yield SystemCommand(command.title, f"{command.help}  (keys: {command.key_display})",
                                lambda cid=command.id: self.run_command(cid))
        yield from super().get_system_commands(screen)


def _first_run(reader: Timeline, run_id: str | None) -> Run | None:
    """The run to show first: ``run_id`` (``NotFoundError`` when unknown), else the newest;
    None in an empty file or store."""
    try:
        return reader.run(run_id)
    except NotFoundError:
        if run_id:
            raise
        return None
