"""The actions of the inspector's main screen: the built-in commands of ``keymap``.

``app.run_command(id)`` lands in ``action_<id>`` here. Navigation asks the app's ``Navigator``
(UI-free, one SQL query per answer) for a target and moves with ``app.go``; a key with nowhere
to go stays put and says so in the status bar. Change searches run in a worker thread that
steps aside while keys are pressed (``model/background.py``). ``InspectorActions`` is a mixin of
``InspectorScreen`` (it uses the screen's ``say``, ``_note`` and panels).
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from textual import work
from textual.worker import get_current_worker

from snapstate_capture import SnapStateError

from ..model.background import polite
from ..model.var_history import find_change
from ..widgets.timeline import TimelineView

NEAR_STEPS = 64  # steps a change search looks at on the UI thread before using a worker


class InspectorActions:
    """Navigation, search and view actions of the main screen (see module docstring)."""

    def _nav(self, target: int | None, *, jump: bool, nothing: str) -> None:
        if target is None:
            self.say(nothing)
            return
        self._note = ""
        self.app.go(target, jump=jump)

    def _here(self) -> int:
        sel = self.app.selection
        return sel.step if sel is not None else -1

    def action_next_step(self) -> None:
        nav = self.app.navigator
        self._nav(nav and nav.next(self._here()), jump=False, nothing="at the last step")

    def action_prev_step(self) -> None:
        nav = self.app.navigator
        self._nav(nav and nav.previous(self._here()), jump=False, nothing="at the first step")

    def action_first_step(self) -> None:
        nav = self.app.navigator
        self._nav(nav and nav.first(), jump=True, nothing="no steps")

    def action_last_step(self) -> None:
        nav = self.app.navigator
        self._nav(nav and nav.last(), jump=True, nothing="no steps")

    def action_step_over(self) -> None:
        self._seek(lambda nav, here: nav.step_over(here), jump=False,
                   nothing="no later step at this depth", what="next step at this depth")

    def action_step_back_over(self) -> None:
        self._seek(lambda nav, here: nav.step_over(here, backward=True), jump=False,
                   nothing="no earlier step at this depth", what="previous step at this depth")

    def action_next_call(self) -> None:
        self._seek(lambda nav, here: nav.call(here), jump=True, nothing="no later call of it",
                   what="next call of this function")

    def action_prev_call(self) -> None:
        self._seek(lambda nav, here: nav.call(here, backward=True), jump=True,
                   nothing="no earlier call of it", what="previous call of this function")

    def action_next_exception(self) -> None:
        self._seek(lambda nav, here: nav.exception(here), jump=True,
                   nothing="no later exception", what="next exception")

    def action_prev_exception(self) -> None:
        self._seek(lambda nav, here: nav.exception(here, backward=True), jump=True,
                   nothing="no earlier exception", what="previous exception")

    def _seek(self, target_of, *, jump: bool, nothing: str, what: str) -> None:
        """Go to ``target_of(navigator, here)``. Rows answer in one SQL query, on the UI thread;
        on a run with traced steps the answer may scan trace chunks (a few tenths of a second
        per million steps), so it runs in a worker and keys stay live meanwhile."""
        nav = self.app.navigator
        if nav is None:
            self.say(nothing)
            return
        here = self._here()
        if not nav.traced:
            self._nav(target_of(nav, here), jump=jump, nothing=nothing)
            return
        self.say(f"looking for the {what}…")
        self._seek_worker(target_of, nav, here, jump, nothing)

    @work(thread=True, exclusive=True, group="seek")
    def _seek_worker(self, target_of, nav, here: int, jump: bool, nothing: str) -> None:
        worker = get_current_worker()
        try:
            target = target_of(nav, here)
        except SnapStateError as exc:  # a damaged file: say so, keep the app up
            self.app.call_from_thread(self.say, str(exc))
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._seek_done, here, target, jump, nothing)

    def _seek_done(self, here: int, target: int | None, jump: bool, nothing: str) -> None:
        if self._here() != here:  # moved on while the worker looked: the answer is stale
            self._note = ""
            self._update_status()
            return
        self._nav(target, jump=jump, nothing=nothing)

    def action_back(self) -> None:
        sel = self.app.selection
        place = self.app.history.back(sel.place) if sel else None
        if place is None:
            self.say("nothing to go back to")
        else:
            self.app.visit(place.run_id, place.step)

    def action_forward(self) -> None:
        sel = self.app.selection
        place = self.app.history.forward(sel.place) if sel else None
        if place is None:
            self.say("nothing to go forward to")
        else:
            self.app.visit(place.run_id, place.step)

    def action_goto_step(self) -> None:
        from .goto import GotoScreen

        self.app.push_screen(GotoScreen(self.app.step_count()), self._goto_done)

    def _goto_done(self, step: int | None) -> None:
        if step is not None:
            self.app.go(step, jump=True)

    def action_next_change(self) -> None:
        self._find_change(backward=False)

    def action_prev_change(self) -> None:
        self._find_change(backward=True)

    def _find_change(self, *, backward: bool) -> None:
        """Look ``NEAR_STEPS`` steps ahead (behind) at once; further in a worker thread. The
        near look reads frame records only (small, size-checked), never a preview, so it is
        safe on the UI thread; a path inside a value compares previews: always the worker."""
        key = self.app.variable
        if key is None:
            self.say("select a variable first (in the Variables panel)")
            return
        here = self._here()
        if not key.path:
            try:
                near = find_change(self.app.current_run, key, here, backward=backward,
                                   loader=self.app.loader, chunk=NEAR_STEPS,
                                   cancelled=lambda: True)  # one chunk, then stop
            except SnapStateError:
                near = None
            if near is not None:
                self.workers.cancel_group(self, "find-change")  # an older, farther search
                self._change_found(key, near, backward)
                return
        self.say(f"looking for the {'previous' if backward else 'next'} change of "
                 f"{key.display}…")
        self._change_worker(key, here, backward)

    @work(thread=True, exclusive=True, group="find-change")
    def _change_worker(self, key, current: int, backward: bool) -> None:
        worker = get_current_worker()
        app = self.app
        try:
            found = find_change(app.current_run, key, current, backward=backward,
                                loader=app.loader, cancelled=polite(worker, app.activity))
        except SnapStateError as exc:  # a damaged file: say so, keep the app up
            app.call_from_thread(self.say, str(exc))
            return
        if worker.is_cancelled:
            return
        app.call_from_thread(self._change_found, key, found, backward)

    def _change_found(self, key, step: int | None, backward: bool) -> None:
        if step is None:
            self.say(f"no {'earlier' if backward else 'later'} change of {key.display}")
        else:
            self._note = ""
            self.app.go(step, jump=True)

    def action_variable_history(self) -> None:
        from .history import VariableHistoryScreen

        key = self.app.variable
        if key is None:
            self.say("select a variable first (in the Variables panel)")
            return
        self.app.push_screen(VariableHistoryScreen(key), self._goto_done)

    def action_search(self) -> None:
        from .search import SearchScreen

        self.app.push_screen(SearchScreen(), self._search_done)

    def _search_done(self, step: int | None) -> None:
        self.refresh_hits()
        if step is None:
            return
        frame, variable = self._matched_variable(step, self.app.search.where.get(step, ""),
                                                 self.app.search.locals_at.get(step))
        if variable is not None:  # the variable the hit is in, selected on arrival
            self.app.variable = variable
        self.app.go(step, jump=True, frame=frame)

    def _matched_variable(self, step: int, where: str,
                          local: tuple[int, str] | None = None) -> tuple[int | None, Any]:
        """For a hit ``value NAME[path]``: the frame of ``step`` holding the local that
        matched and its ``VariableKey`` — ``local`` (frame position, name) when the search
        said which, else the innermost frame with a local NAME (a traced step's hit is its
        innermost frame's); ``(None, None)`` for other hits or a step that cannot be read."""
        from ..model.values import VariableKey

        if not where.startswith("value "):
            return None, None
        name = re.split(r"[\[.]", where[len("value "):], maxsplit=1)[0]
        try:
            frames = self.app.current_run.steps[step].frames
        except Exception:  # noqa: BLE001 - an unreadable step: the hit still goes there
            return None, None
        if local is not None and local[0] < len(frames) and local[1] in frames[local[0]].locals:
            position, name = local
            return position, VariableKey(position, frames[position].function or "", name)
        for position in range(len(frames) - 1, -1, -1):
            if name in frames[position].locals:
                return position, VariableKey(position, frames[position].function or "", name)
        return None, None

    def refresh_hits(self) -> None:
        """The search moved on: mark hits on the timeline, show progress in the status bar."""
        state = self.app.search
        with state.lock:
            hits = frozenset(state.hits)
        timeline = self.query_one(TimelineView)
        if hits != timeline.hits:
            timeline.set_hits(hits)
        self._update_status()

    def action_stop_search(self) -> None:
        self.app.stop_search()

    def action_next_hit(self) -> None:
        self._hit(forward=True)

    def action_prev_hit(self) -> None:
        self._hit(forward=False)

    def _hit(self, *, forward: bool) -> None:
        hits = self.app.search_hits
        here = self._here()
        if forward:
            position = bisect.bisect_right(hits, here)
            target = hits[position] if position < len(hits) else None
        else:
            position = bisect.bisect_left(hits, here)
            target = hits[position - 1] if position > 0 else None
        self._nav(target, jump=True, nothing="no more search hits" if hits else "no search yet")

    def action_runs(self) -> None:
        if self.app.on_store:  # a store's runs: a table read a page at a time
            from .store_runs import StoreRunsScreen

            self.app.push_screen(StoreRunsScreen(), self._run_chosen)
            return
        from .runs import RunsScreen

        self.app.refresh_runs()
        self.app.push_screen(RunsScreen(), self._run_chosen)

    def _run_chosen(self, run_id: str | None) -> None:
        if run_id is not None:
            self.app.switch_run(run_id)

    def action_toggle_follow(self) -> None:
        self.app.follow = not self.app.follow
        if not self.app.follow:
            self.say("follow off")
        elif getattr(self.app.current_run, "status", None) == "running":
            self.say("new steps show as they are recorded")
        else:  # (the status bar says "following" already)
            self.say("new runs and steps show as they come; this run has ended")

    def action_help(self) -> None:
        self.app.push_screen("help")

    def action_palette(self) -> None:
        self.app.action_command_palette()

    def action_quit(self) -> None:
        self.app.exit()
