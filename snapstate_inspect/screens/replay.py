"""Fork here and replay check: the inspector's side of replay (issue 9 point 6).

- **Fork here** (``f``): on the selected step, choose pdb, a console or live. The app suspends,
  ``snapstate_capture.replay.launch.replay`` runs the replay child in the terminal, and on
  return the file is re-read, the new branch (a live fork) is shown and the runs tree opens
  with it selected.
- **Replay check** (``R``): replays the current run in the background (effects served, output
  captured) and shows the outcome: no divergence, or the divergence with expected vs actual;
  Enter goes to the divergent step.

Both need trust (a run signed with the user's key, or ``snapstate inspect --trust``): replay
starts the program the file names and loads its payloads. Code drift is refused here; the
command line's ``--allow-drift`` is the way to replay changed code. Replay always runs in a
child process, never in the inspector's.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any

from rich.text import Text
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.css.query import NoMatches
from textual.widgets import Label, OptionList, Static, Tree
from textual.widgets.option_list import Option

from snapstate_capture import Run, SnapStateError, UntrustedPayloadError

from .. import keymap
from ..safe_text import plain

# The replay machinery (snapstate_capture.replay, .trust, the command line's rendering) is
# imported where it is used: the inspector's start-up does not pay for it.

REPLAY = "Replay and fork"
MODES = (("pdb", "pdb on the live frame at this step"),
         ("console", "an interactive console with this step's locals and globals"),
         ("live", "continue live from this step as a new run (a fork)"))


class ForkScreen(ModalScreen[str | None]):
    """Choose how to fork at a step; dismisses with ``pdb``, ``console``, ``live`` or None."""

    BINDINGS = [Binding("p", "choose('pdb')", "pdb"),
                Binding("c", "choose('console')", "console"),
                Binding("l", "choose('live')", "live"),
                Binding("q,escape", "choose('')", "Cancel")]

    def __init__(self, run: Run, step: int) -> None:
        super().__init__()
        self.run, self.step = run, step

    def compose(self) -> ComposeResult:
        with Vertical(id="fork-box", classes="dialog"):
            yield Label(plain(f"Fork run {self.run.id[:8]} ({self.run.name}) at step "
                              f"{self.step}: replay to here with effects served, then…"))
            yield OptionList(*(Option(f"{mode[0]}: {what}", id=mode) for mode, what in MODES),
                             id="fork-modes")
            yield Label("p, c, l or Enter to choose; q to cancel")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_choose(self, mode: str) -> None:
        self.dismiss(mode or None)


class ReplayOutcomeScreen(ModalScreen[int | None]):
    """The outcome of a replay check; dismisses with the divergent step (Enter) or None."""

    BINDINGS = [Binding("enter", "go", "Go to the divergent step"),
                Binding("q,escape", "close", "Close")]

    def __init__(self, result: dict[str, Any], path: str) -> None:
        super().__init__()
        self.result, self.path = result, path
        from ..commands.replay import render_result

        #: The outcome as shown: the command line's rendering, as one plain ``Text``.
        self.text = Text("\n").join(render_result(result, timeline=path).renderables)

    @property
    def divergent_step(self) -> int | None:
        report = self.result.get("divergence")
        return report.get("step") if isinstance(report, dict) else None

    def compose(self) -> ComposeResult:
        with Vertical(id="replay-box", classes="dialog"):
            yield Label("Replay check", id="replay-title")
            with VerticalScroll():
                yield Static(self.text, id="replay-outcome")
            hint = ("Enter: go to the divergent step; q: close"
                    if self.divergent_step is not None else "q: close")
            yield Label(hint)

    def action_go(self) -> None:
        self.dismiss(self.divergent_step)

    def action_close(self) -> None:
        self.dismiss(None)


def _preflight(app: Any, run: Run) -> str | None:
    """Why ``run`` cannot be replayed from here (trust, drift), or None."""
    from snapstate_capture.replay.drift import find_drift
    from snapstate_capture.trust.gate import require_trust

    try:
        require_trust(run, trust=bool(getattr(app, "trust", False)), what="payloads for replay")
        drift = find_drift(run)
    except UntrustedPayloadError as exc:  # the remedy here first: --trust is the inspector's
        return (f"If you trust this file, open it with `snapstate inspect --trust "
                f"{shlex.quote(str(run.timeline.path))}`.\n{exc}")
    except SnapStateError as exc:
        return str(exc)
    if drift:
        names = ", ".join(d.filename.rsplit("/", 1)[-1] for d in drift[:3])
        return (f"code changed since the recording ({names}); use `snapstate replay "
                f"{run.timeline.path} --run {run.id[:8]} --allow-drift` to replay anyway")
    return None


def fork_here(app: Any) -> None:
    """The ``fork_here`` command: choose a mode for the selected step, then fork."""
    run, step = app.current_run, app.current_step()
    if run is None or step is None:
        return
    problem = _preflight(app, run)
    if problem is not None:
        app.notify(problem, title="Cannot fork", severity="error", timeout=8)
        return

    def chosen(mode: str | None) -> None:
        if mode:
            fork(app, run, step.index, mode)

    app.push_screen(ForkScreen(run, step.index), chosen)


def fork(app: Any, run: Run, index: int, mode: str) -> dict[str, Any] | None:
    """Replay ``run`` to step ``index`` in the terminal (the app suspended), then show the new
    branch. Where the app cannot suspend (a headless test), ``live`` runs with its output
    captured; pdb and the console need a terminal. Returns the replay's result or None."""
    from snapstate_capture.replay.launch import replay

    try:
        try:
            with app.suspend():
                result = replay(run, to=index, mode=mode, trust=True)
                _pause(result)
        except SuspendNotSupported:
            if mode != "live":
                app.notify("pdb and the console need a terminal", severity="error")
                return None
            result = replay(run, to=index, mode=mode, trust=True, capture_output=True)
    except SnapStateError as exc:
        app.notify(str(exc), title="Replay failed", severity="error", timeout=8)
        return None
    app.refresh_runs()
    created = result.get("fork")
    if created:
        app.switch_run(created["run"])
        main = app._main_screen()
        if main is not None:
            main.action_runs()  # the runs tree, with the new branch selected
            app.call_after_refresh(select_in_runs_tree, app, created["run"])
    app.notify(plain(str(result.get("message", ""))).plain, title=f"Fork ({mode})",
               severity="error" if result.get("status") == "error" else "information")
    return result


def select_in_runs_tree(app: Any, run_id: str) -> None:
    """Put the runs tree's cursor on ``run_id``: every node of that tree is expanded, so a
    node's line is its place in depth-first order (the hidden root has none)."""
    try:
        tree = app.screen.query_one("#runs-tree", Tree)
    except NoMatches:
        return
    order: list[Any] = []

    def walk(node: Any) -> None:
        for child in node.children:
            order.append(child)
            walk(child)

    walk(tree.root)
    for line, node in enumerate(order):
        if node.data == run_id:
            tree.cursor_line = line
            tree.scroll_to_line(line)
            return


def _pause(result: dict[str, Any]) -> None:
    """Let the user read the child's last lines before the inspector redraws."""
    if not sys.stdin.isatty():
        return
    sys.stdout.write(f"\n{result.get('message', '')}\nPress Enter to return to the inspector.")
    sys.stdout.flush()
    try:
        sys.stdin.readline()
    except (OSError, ValueError):
        pass


def replay_check(app: Any) -> None:
    """The ``replay_check`` command: replay the current run in the background, show the
    outcome."""
    run = app.current_run
    if run is None:
        return
    problem = _preflight(app, run)
    if problem is not None:
        app.notify(problem, title="Cannot replay", severity="error", timeout=8)
        return
    app.notify(f"replaying run {run.id[:8]}…", timeout=2)
    from snapstate_capture.replay.launch import replay

    def work() -> None:
        try:
            result = replay(run, trust=True, capture_output=True, progress=False)
        except SnapStateError as exc:
            result = {"status": "error", "message": str(exc)}
        app.call_from_thread(show_outcome, app, result, str(run.timeline.path))

    app.run_worker(work, thread=True, group="replay", exclusive=True)


def show_outcome(app: Any, result: dict[str, Any], path: str) -> None:
    """Show a replay check's ``result``; Enter on a divergence selects that step."""
    app.replay_result = result

    def chosen(step: int | None) -> None:
        if step is not None:
            app.go(step, jump=True)

    app.push_screen(ReplayOutcomeScreen(result, path), chosen)


keymap.register(keymap.Command(
    "fork_here", "f", "Fork here…",
    "Replay to this step (effects served), then pdb, a console or continue live as a new run.",
    REPLAY, footer=True, run=fork_here, short="Fork"))
keymap.register(keymap.Command(
    "replay_check", "R", "Replay check",
    "Replay this run with effects served and show whether it diverges from the recording.",
    REPLAY, run=replay_check))
