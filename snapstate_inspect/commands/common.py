"""What several subcommands share: opening the file, choosing a run and a step, printing."""

from __future__ import annotations

import argparse
import io
import json
import sys
from typing import TYPE_CHECKING, Any


from snapstate_capture import NotFoundError, Run, Step, Timeline, open_timeline
from snapstate_capture.errors import step_out_of_range

if TYPE_CHECKING:  # imported where a console is made: ``snapstate record`` imports this
    from rich.console import Console  # module before the program, which must find no rich


def add_file_argument(parser: argparse.ArgumentParser) -> None:
    """Add the positional FILE argument."""
    parser.add_argument("file", metavar="FILE", help="a .snap timeline file")


def add_run_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--run ID`` (any unique prefix; default the last run)."""
    parser.add_argument("--run", metavar="ID", default=None, type=run_prefix,
                        help="run id or unique prefix (default: the last run in the file)")


def run_prefix(text: str) -> str:
    """A ``--run`` value: not empty (an empty prefix would match every run, and took the
    last one unasked)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty run id: give a run id or its prefix")
    return text


def open_file(path: str, *, trust: bool = False) -> Timeline:
    """Open ``path`` for reading; ``TimelineError`` propagates to the CLI's error line."""
    return open_timeline(path, trust=trust)


def pick_step(timeline: Timeline, run: Run, index: int | None) -> Step:
    """Return step ``index`` of ``run`` (negative counts from the end; None is the last step).

    Raises ``NotFoundError`` naming the file when out of range or the run has no steps.
    """
    count = len(run.steps)
    if count == 0:
        raise NotFoundError(timeline.path, f"run {run.id[:8]} has no steps")
    position = count - 1 if index is None else index
    if position < 0:
        position += count
    if not 0 <= position < count:
        raise NotFoundError(timeline.path, step_out_of_range(index, run.id, count))
    return run.steps[position]


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout (non-JSON numbers written as strings)."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def console() -> Console:
    """A Rich console for human output: never interprets markup or emoji from data. On a
    terminal, lines wrap at its width; piped or redirected, a line is never broken (Rich
    would otherwise cut it at 80 columns, in the middle of ``… 146 steps)``) and ends where
    its text does (``_Unpadded``)."""
    from rich.console import Console

    terminal = sys.stdout.isatty()
    return Console(markup=False, emoji=False, highlight=False, soft_wrap=not terminal,
                   width=None if terminal else 10_000,
                   file=None if terminal else _Unpadded(sys.stdout))


class _Unpadded(io.TextIOBase):
    """Standard output when piped, without the spaces Rich pads each row of a table with to
    its widest row (``snapstate show | less`` had every line 500 characters long)."""

    def __init__(self, out: Any) -> None:
        super().__init__()
        self._out = out
        self._line = ""  # the part of a line not ended yet

    def write(self, text: str) -> int:
        lines = (self._line + text).split("\n")
        self._line = lines.pop()
        if lines:
            self._out.write("\n".join(line.rstrip(" ") for line in lines) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._line:
            self._out.write(self._line)
            self._line = ""
        self._out.flush()
