"""The inspector's diff actions (issue 8, point 4), registered in the command table at import.

- ``m`` — mark the selected step (any run of the file);
- ``d`` — diff the marked step → the selected step (``StepDiffScreen``);
- ``=`` — compare runs side by side (``CompareScreen``): the run on screen against the second
  file's run when one was given (``snapstate inspect A.snap B.snap``), else against the run of
  the marked step when it is another run, else against the run before it in the file.

``open_comparison(app)`` is what the app calls at start when a comparison was asked for on the
command line (a second file, or ``--compare ID``).
"""

from __future__ import annotations

from typing import Any

from snapstate_capture import Run, SnapStateError

from .. import keymap

# The diff screens import deepdiff (and through it, pandas when installed): seconds of start-up.
# They are imported when first opened, so the inspector's first screen never waits for them.

DIFF = "Diff"


def mark_step(app: Any) -> None:
    """Remember the selected step (run id, index) as ``app.diff_mark``."""
    step = app.current_step()
    if step is None:
        app.notify("no step to mark", timeout=2)
        return
    app.diff_mark = (step.run.id, step.index)
    app.notify(f"marked step {step.index} of run {step.run.id[:8]}; "
               "select another step and press d", timeout=3)


def diff_against_mark(app: Any) -> None:
    """Open the diff of the marked step → the selected step."""
    mark = getattr(app, "diff_mark", None)
    step = app.current_step()
    if mark is None or step is None:
        app.notify("mark a step first (m), then select another and press d", timeout=3)
        return
    run = app.find_run(mark[0])
    try:
        marked = run.steps[mark[1]] if run is not None else None
    except (IndexError, SnapStateError):
        marked = None
    if marked is None:
        app.notify("the marked step cannot be read any more", timeout=3)
        return
    from .step_diff import StepDiffScreen

    app.push_screen(StepDiffScreen(marked, step))


def other_run(app: Any) -> Run | None:
    """The run to compare the one on screen with (see the module docstring)."""
    wanted = getattr(app, "compare_run", None)
    current = app.current_run
    if app.other is not None:
        return app.other.run(wanted)
    if wanted:
        return app.reader.run(wanted)
    mark = getattr(app, "diff_mark", None)
    if mark is not None and current is not None and mark[0] != current.id:
        return app.find_run(mark[0])
    if current is None:
        return None
    if app.on_store:  # the run before it in the store (a store is not read whole)
        earlier = app.reader.run_page(before=current.seq, limit=1)
        if earlier:
            return earlier[0]
        return next((r for r in app.reader.run_page(limit=2) if r.id != current.id), None)
    runs = app.runs
    if len(runs) < 2:
        return None
    position = next(i for i, r in enumerate(runs) if r.id == current.id)
    return runs[position - 1] if position > 0 else runs[1]


def open_comparison(app: Any) -> None:
    """Push the compare screen for the run on screen and ``other_run(app)``."""
    current = app.current_run
    try:
        other = other_run(app)
    except SnapStateError as exc:
        app.notify(str(exc), severity="error", timeout=4)
        return
    if current is None or other is None:
        app.notify("nothing to compare with: open a second file, or a file with two runs",
                   timeout=3)
        return
    from .compare import CompareScreen

    # closed, the inspector shows run A where the comparison was (not where it was before)
    app.push_screen(CompareScreen(current, other), lambda step: app.go(step, jump=True))


keymap.register(keymap.Command(
    "mark_step", "m", "Mark this step", "Mark the selected step to diff other steps against.",
    DIFF, run=mark_step))
keymap.register(keymap.Command(
    "diff_mark", "d", "Diff against the mark",
    "Diff the marked step → the selected step: variables added, removed, changed.", DIFF,
    run=diff_against_mark))
keymap.register(keymap.Command(
    "compare_runs", "equals_sign", "Compare runs",
    "Two runs side by side, aligned, the first divergence selected (second file, marked run, "
    "or the previous run).", DIFF, run=open_comparison))
