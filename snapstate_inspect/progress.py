"""Progress of long commands, on stderr, only when stderr is a terminal and the user did not
ask for ``--quiet`` (or ``--json``).

``bar(description, quiet=...)`` (diff, verify, gc, push, pull) is a context manager giving
``update(done, total)``: a transient rich bar, gone when the work is, so a command's own
output reads as before. ``lines(...)`` (record, replay) gives the same ``update`` and writes a
whole line now and then instead: there the program's own output shares the terminal, and a
bar redrawn in place joined every line the program printed (``recording ━━━━ 1400833/?
steps written  line 7: done``) — and, in the recorded program's process, imported rich before
the program. When nothing is shown ``update`` is a no-op, so commands call it
unconditionally. The capture side never imports this (it reports progress through plain
callbacks).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
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


#: Seconds before the first progress line (a short run shows none) and between two lines.
FIRST_LINE_SECONDS = 3.0
LINE_EVERY_SECONDS = 10.0


@contextlib.contextmanager
def lines(description: str, *, quiet: bool = False, unit: str = "steps") -> Iterator[Update]:
    """Progress beside a program writing to the same terminal: yields ``update(done,
    total)`` (thread-safe), which writes ``snapstate: DESCRIPTION, DONE[ of TOTAL] UNIT (N s)``
    as a whole line on stderr, the first after ``FIRST_LINE_SECONDS`` and then at most every
    ``LINE_EVERY_SECONDS``: lines go between the program's own, never into them.

    Written with ``os.write`` to a duplicate of the terminal's descriptor taken on entry, so
    no stream object of the program is used (it may have replaced ``sys.stderr``) and no
    library is imported into a recorded program's process."""
    if not wanted(quiet):
        yield lambda done, total: None
        return
    try:
        fd = os.dup(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        yield lambda done, total: None
        return
    start = time.monotonic()
    due = [start + FIRST_LINE_SECONDS]
    lock = threading.Lock()

    def update(done: int, total: int) -> None:
        now = time.monotonic()
        of = f" of {total:,}" if total else ""
        text = f"snapstate: {description}, {done:,}{of} {unit} ({now - start:.0f} s)\n"
        with lock:  # (held while writing: the descriptor is closed under it)
            if now < due[0]:
                return
            due[0] = now + LINE_EVERY_SECONDS
            try:
                os.write(fd, text.encode("utf-8", "replace"))
            except OSError:
                pass  # the terminal went away: the work goes on

    try:
        yield update
    finally:
        with lock:
            due[0] = float("inf")
            os.close(fd)


def add_quiet_argument(parser) -> None:  # noqa: ANN001 - an argparse parser
    """``--quiet``: no progress bar."""
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar (there is none when stderr is not a terminal)")
