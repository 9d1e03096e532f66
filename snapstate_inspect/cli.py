"""The ``snapstate`` command: argument parsing, dispatch and error reporting.

Errors from the file or the arguments print one line on stderr naming the file and the problem
and exit with code 2; ``SNAPSTATE_DEBUG=1`` shows the traceback instead (DESIGN.md "Command
line"). ``snapstate FILE [FILE2]`` is short for ``snapstate inspect FILE [FILE2]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from snapstate_capture import SnapStateError

from . import commands

EXIT_ERROR = 2


class UsageError(SnapStateError):
    """Bad command-line arguments discovered after parsing (exit code 2)."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, as every other error of the
    command (``snapstate replay: argument --to: invalid int value: 'abc' (see snapstate
    replay --help)``), exit code 2; its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Return the ``snapstate`` argument parser with every subcommand registered (or just
    ``only``: the others' modules are then not imported)."""
    parser = OneLineParser(
        prog="snapstate",
        description="Time-travel debugger for Python programs: record, browse, diff, replay.",
        epilog="`snapstate FILE` opens FILE in the inspector. Set SNAPSTATE_DEBUG=1 to see "
               "tracebacks of internal errors.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in commands.NAMES if only is None else (only,):
        commands.load(name).register(sub)
    return parser


def _mark_console_script() -> None:
    """The ``snapstate`` script that started this process is snapstate's, not the recorded
    program's (``include.mark_own_script``): ``record --include '*'`` traced its frame."""
    from snapstate_capture.tracing.include import mark_own_script

    frame = sys._getframe()
    while frame.f_back is not None:
        frame = frame.f_back
    mark_own_script(frame.f_code.co_filename)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``snapstate`` command with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if argv is None:
        _mark_console_script()
    if args_list and args_list[0] not in commands.NAMES and not args_list[0].startswith("-"):
        mistyped = _mistyped_command(args_list[0])
        if mistyped is not None:
            return _fail(mistyped)
        args_list.insert(0, "inspect")
    if argv is None and args_list[:1] == ["record"]:
        # A random hash secret could not be given to the replay child: this command starts
        # again, before parsing, under a chosen PYTHONHASHSEED the program does not see.
        from snapstate_capture.capture.hashseed import reexec_with_seed

        reexec_with_seed()
    # `snapstate COMMAND ...` needs that command's parser only (start-up of `snapstate FILE`)
    chosen = args_list[0] if args_list and args_list[0] in commands.NAMES else None
    parser = build_parser(chosen)
    if not args_list:
        parser.print_help()
        return EXIT_ERROR
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse already printed the usage error
        return EXIT_ERROR if exc.code else 0
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_ERROR
    try:
        return int(handler(args) or 0)
    except SnapStateError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        if os.environ.get("SNAPSTATE_DEBUG") == "1":
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} (SNAPSTATE_DEBUG=1 shows more)")


def _mistyped_command(word: str) -> str | None:
    """What to say when ``snapstate WORD`` names neither a command nor a file: a bare word
    (no dot, separator or URL scheme) that is no path (``snapstate list x.snap``), with the
    command it is closest to; None for anything that may be a timeline to open."""
    if os.path.exists(word) or any(mark in word for mark in (".", os.sep, "/", "://")):
        return None
    import difflib

    close = difflib.get_close_matches(word, sorted(commands.NAMES), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return (f"{word}: no such command, nor a file to open (`snapstate -h` lists the "
            f"commands){hint}")


def _fail(message: str) -> int:
    if os.environ.get("SNAPSTATE_DEBUG") == "1":
        import traceback

        traceback.print_exc()
    from .safe_text import escape_controls

    sys.stderr.write(f"snapstate: {escape_controls(message, keep_newlines=False)}\n")
    return EXIT_ERROR
