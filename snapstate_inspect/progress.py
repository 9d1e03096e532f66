"""Progress bars for long commands (record, replay, diff, verify, gc): rich, on stderr, only
when stderr is a terminal and the user did not ask for ``--quiet`` (or ``--json``).

``bar(description, quiet=...)`` is a context manager giving ``update(done, total)``; when no
bar is shown it is a no-op, so commands call it unconditionally. Bars are transient: gone
when the work is, so a command's own output reads as before. The capture side never imports
this (it reports progress through plain callbacks).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

Update = Callable[[int, int], None]


def wanted(quiet: bool = False) -> bool:
    """True when a bar would be shown: stderr is a terminal and not ``quiet``."""
    try:
        return not quiet and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def bar(description: str, *, quiet: bool = False, unit: str = "steps") -> Iterator[Update]:
    """A transient progress bar on stderr; yields ``update(done, total)`` (thread-safe)."""
    if not wanted(quiet):
        yield lambda done, total: None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeRemainingColumn)

    console = Console(stderr=True, markup=False, emoji=False, highlight=False)
    columns = (TextColumn("{task.description}", markup=False), BarColumn(),
               MofNCompleteColumn(), TextColumn(unit, markup=False), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True, redirect_stdout=False,
                  redirect_stderr=False, refresh_per_second=8) as progress:
        task = progress.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total or None)

        yield update


def add_quiet_argument(parser) -> None:  # noqa: ANN001 - an argparse parser
    """``--quiet``: no progress bar."""
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar (there is none when stderr is not a terminal)")
