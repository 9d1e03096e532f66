"""``snapstate record [-o FILE] [--name NAME] [--trace calls|lines] [--include GLOB]...
[--exclude GLOB]... script.py [args...] | -m module [args...]``: run a program unmodified,
recording it.

The program runs as ``python script.py args`` would (``runpy``, as ``python -m`` does): same
``sys.argv``, a ``__main__`` module, ``sys.path[0]``, stdin/stdout/stderr and exit code —
``sys.exit(n)`` exits ``n``, an uncaught exception prints its traceback and exits 1, Ctrl-C and
SIGTERM end the process by that signal. The run ends ``finished`` or ``failed`` (with an
``exception`` step at the raise point) and everything is on disk before the process ends. The
file (default: ``.snapstate/NAME-YYYYmmdd-HHMMSS.snap`` in the current directory) and the
command that opens it are printed on stderr at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import runpy
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import snapstate_capture
import snapstate_inspect
from snapstate_capture.capture import hashseed
from snapstate_capture import record as record_block
from snapstate_capture.capture.environment import entry_facts, script_name
from snapstate_capture.capture.script import run_script
from snapstate_capture.capture.start_depth import depth_for_callee
from snapstate_capture.errors import SnapStateError
from snapstate_capture.own_threads import start_own_thread

from ..progress import lines as progress_lines, wanted as progress_wanted
from ..safe_text import escape_controls
from .common import open_file
from .record_threads import join_program_threads


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "record", help="run a Python program, recording every step",
        description="Run script.py (or -m module) exactly as python would, recording every "
                    "call (--trace calls) or every line (--trace lines, the default) of your "
                    "own code into a timeline file.")
    parser.add_argument("-o", "--output", metavar="FILE", default=None,
                        help="timeline file (default: .snapstate/NAME-TIME.snap)")
    parser.add_argument("--name", default=None, help="run name (default: the script name)")
    parser.add_argument("--trace", choices=("calls", "lines"), default="lines",
                        help="granularity of automatic steps (default: lines)")
    parser.add_argument("--include", metavar="GLOB", action="append", default=[],
                        help="trace only files matching GLOB (repeatable; default: files "
                             "under the current directory outside stdlib/site-packages)")
    parser.add_argument("--exclude", metavar="GLOB", action="append", default=[],
                        help="never trace files matching GLOB (repeatable)")
    parser.add_argument("--patch-nondeterminism", action="store_true",
                        help="serve clocks, datetime.now, random, uuid, os.urandom, secrets "
                             "and input from the recording on replay, whoever calls them")
    parser.add_argument("--quiet", action="store_true",
                        help="no line of snapstate's own on stderr: no progress of steps "
                             "written (there is none when stderr is not a terminal), no notes, "
                             "no summary at the end (the program's stderr, byte for byte); "
                             "errors are still said")
    parser.add_argument("-m", dest="module", metavar="MODULE", default=None,
                        nargs=argparse.REMAINDER,
                        help="run library module as a script (like python -m); the rest of "
                             "the command line is its arguments")
    parser.add_argument("program", nargs=argparse.REMAINDER, metavar="script.py [args]",
                        help="the script and its arguments")
    parser.set_defaults(handler=run)


class _Terminated(BaseException):
    """Raised in the main thread by the SIGTERM handler: ends the run, then the process."""


def run(args: argparse.Namespace) -> int:
    # The seed cli.main started this process under, if it chose one: hidden from the program,
    # still recorded (snapstate_capture/hashseed.py).
    hashseed.take_hidden_seed()
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if args.module is not None:
        if not args.module:
            raise SnapStateError("record: -m needs a module name")
        args.module, program = args.module[0], args.module[1:]
    if args.module is None and not program:
        raise SnapStateError("record: give a script or -m module")
    if args.module is not None:
        target, argv = args.module, program
        label = args.module.rsplit(".", 1)[-1]
    else:
        target, argv = program[0], program[1:]
        if not os.path.isfile(target):
            raise SnapStateError(f"{target}: no such file")
        label = Path(target).stem
    output = _output(args.output) if args.output else _default_output(label)
    start_file = _check_before_running(args.module, target, output)
    options = {"name": args.name or label, "trace": args.trace, "include": args.include,
               "exclude": args.exclude}
    if args.patch_nondeterminism:
        options["patch_nondeterminism"] = True
    block = record_block(output, **options, entry=_entry(args.module, target, argv, options))
    if not args.quiet:
        _warn_untraced(args.module, start_file, args.include, args.exclude)
    previous_term = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    outcome: BaseException | None = None
    try:
        with _steps_written(block, output, quiet=args.quiet or not args.trace):
            outcome = _run_program(block, args.module, target, argv)
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous_term)
        if not args.quiet:  # the program's stderr, byte for byte, with --quiet
            _note_compiled(args.include, args.exclude)
            _report(block, output)
    return _exit(outcome)


@contextlib.contextmanager
def _steps_written(block: record_block, output: Path, *, quiet: bool) -> Iterator[None]:
    """While a traced program runs: the steps written so far, read from the file four times a
    second by a thread of its own (never traced, daemon: the program's own end is not held
    up), told now and then as a whole line on stderr when it is a terminal
    (``progress.lines``: the program's output shares that terminal)."""
    if not progress_wanted(quiet):
        yield
        return
    stop = threading.Event()

    def watch(update) -> None:  # noqa: ANN001
        sys.settrace(None)
        while not stop.wait(0.25):
            if block.run_id is None or not output.exists():
                continue
            try:
                with open_file(str(output)) as timeline:
                    update(timeline.run(block.run_id).step_count or 0, 0)
            except Exception:  # noqa: BLE001 - a bar must never stop the recording
                continue

    with progress_lines("recording", quiet=quiet, unit="steps written") as update:
        watcher = threading.Thread(target=watch, args=(update,), name="snapstate-progress",
                                   daemon=True)
        start_own_thread(watcher.start)
        try:
            yield
        finally:
            stop.set()
            watcher.join(timeout=1.0)


def _run_program(block: record_block, module: str | None, target: str,
                 argv: list[str]) -> BaseException | None:
    """Run the program inside the record block; return how it ended (None: normally)."""
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    if module is None:
        sys.argv = [target, *argv]
        sys.path[0] = os.path.dirname(os.path.abspath(target))
    else:
        sys.argv = [module, *argv]  # runpy puts the module's file name in argv[0]
        sys.path[0] = os.getcwd()
    if block.entry is not None:  # the replay starts the program as deep (capture/start_depth)
        block.entry["start_depth"] = depth_for_callee()
    try:
        with block:
            try:
                if module is None:  # a fresh ``__main__``, ``sys.argv[0]`` left as typed
                    run_script(target)
                else:
                    runpy.run_module(module, run_name="__main__", alter_sys=True)
            finally:
                join_program_threads()
    except BaseException as exc:  # noqa: BLE001 - every end of the program is reported as is
        return exc
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
    return None


def _exit(outcome: BaseException | None) -> int:
    if outcome is None:
        return 0
    if isinstance(outcome, SystemExit):
        raise SystemExit(outcome.code)
    if isinstance(outcome, _Terminated):
        _die_by(signal.SIGTERM)
    if isinstance(outcome, KeyboardInterrupt):
        _print_traceback(outcome)
        _die_by(signal.SIGINT)
    _print_traceback(outcome)
    return 1


def _die_by(signum: int) -> None:
    """End the process by ``signum``'s default action, as an unrecorded program would."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    raise SystemExit(128 + signum)  # not reached where the signal kills


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def _output(text: str) -> str | Path:
    """The ``-o`` argument: a URL as typed (a store's; any other is refused before the program
    runs, ``locations.check_location``), else a file path."""
    from snapstate_capture.store.locations import is_url

    return text if is_url(text) else Path(text)


def _check_before_running(module: str | None, target: str, output: str | Path) -> str | None:
    """Raise ``SnapStateError`` (one line, exit 2) before the program starts when it could not
    be recorded: an output that exists and is no timeline (a run would silently go unrecorded),
    or a ``-m`` module that cannot be found (python says the same and exits without running).
    Returns the file the program starts in (None when not found without importing)."""
    from snapstate_capture.errors import StoreUnreachable
    from snapstate_capture.store.locations import open_read_engine, open_write_engine

    if isinstance(output, str):  # a store: made on first use; out of reach, spooled
        try:
            open_write_engine(output).close()
        except StoreUnreachable as exc:  # the run waits in the local spool meanwhile
            print(escape_controls(f"snapstate: {exc}; recording into the local spool until "
                                  "it can be reached", keep_newlines=False), file=sys.stderr)
    elif output.exists():
        open_read_engine(output).close()  # TimelineError names the file and the problem
    if module is None:
        return os.path.abspath(target)
    return _module_file(module)


def _module_file(module: str) -> str | None:
    """The file ``python -m module`` starts in, found without importing anything (a package's
    ``__init__`` would run here, unrecorded): ``a.b`` -> ``a``'s folder/``b.py`` or
    ``b/__main__.py``; a top-level module -> its file. None when it has no file (a built-in).
    Raises ``SnapStateError`` when there is no such module."""
    import importlib.util

    top, *rest = module.split(".")
    saved = sys.path[0] if sys.path else None
    if saved is not None:
        sys.path[0] = os.getcwd()  # where ``python -m`` looks first, as _run_program sets
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    finally:
        if saved is not None:
            sys.path[0] = saved
    if spec is None:
        if top in sys.modules:  # loaded already, with no spec to read (``__main__``)
            return None
        raise SnapStateError(f"{module}: no module named {module!r}")
    if not spec.has_location:
        return None
    if rest and spec.submodule_search_locations:  # a.b.c: a's folder/b/c.py, not a/__init__
        for folder in spec.submodule_search_locations:
            base = os.path.join(folder, *rest)
            for candidate in (base + ".py", os.path.join(base, "__main__.py")):
                if os.path.isfile(candidate):
                    return candidate
    return spec.origin


def _print_traceback(exc: BaseException) -> None:
    """Report the program's uncaught exception as python does: its traceback without runpy's
    and SnapState's frames (leading, and trailing ones — a ``RecursionError`` raised inside the
    tracer), ``sys.last_type``/``last_value``/``last_traceback`` set, then ``sys.excepthook`` —
    the program's own hook if it set one, else the interpreter's, which reads source lines as
    a plain run does (``traceback.print_exception`` goes through ``linecache``, which shows a
    module's lines for generated code such as networkx's ``"<class 'argmap'> compilation 20"``
    frames). A hook that raises, is ``None`` or was deleted is reported in python's words."""
    tb = exc.__traceback__
    while tb is not None and _ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    last = None  # the program's innermost frame: what comes after it is SnapState's
    for entry in _chain(tb):
        if not _ours(entry.tb_frame.f_code.co_filename):
            last = entry
    if last is not None:
        last.tb_next = None
    exc = exc.with_traceback(tb)  # the interpreter's hook reads the exception's own
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = exc
    try:
        hook = sys.excepthook
    except AttributeError:
        sys.stderr.write("sys.excepthook is missing\n")
        sys.__excepthook__(type(exc), exc, tb)
        return
    try:
        hook(type(exc), exc, tb)
    except SystemExit:
        raise  # a hook that exits: python exits with its code too
    except BaseException as failed:  # noqa: BLE001 - reported as python reports it
        sys.stderr.write("Error in sys.excepthook:\n")
        failed_tb = failed.__traceback__.tb_next if failed.__traceback__ else None
        sys.__excepthook__(type(failed), failed.with_traceback(failed_tb), failed_tb)
        sys.stderr.write("\nOriginal exception was:\n")
        sys.__excepthook__(type(exc), exc, tb)


#: Where SnapState's own code and runpy live: their frames are left out of a program's
#: traceback (a user's folder that merely has "snapstate" in its name is not).
_OWN_FOLDERS = tuple(os.path.dirname(os.path.abspath(module.__file__)) + os.sep
                     for module in (snapstate_capture, snapstate_inspect))


def _ours(filename: str) -> bool:
    return (filename.startswith(_OWN_FOLDERS) or filename == runpy.__file__
            or filename.startswith("<frozen runpy"))


def _chain(tb: Any) -> Iterator[Any]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _warn_untraced(module: str | None, path: str | None, include: list[str],
                   exclude: list[str]) -> None:
    """Say so before running when the program's own file will not be traced (the default traces
    only your code, as ``coverage run`` measures only it), with the option that changes it."""
    from snapstate_capture.tracing.include import IncludeRule

    if path is None or IncludeRule(include, exclude).includes(path):
        return
    if include or exclude:
        why = "it matches no --include glob" if include else "an --exclude glob matches it"
    else:
        why = ("only your own code is traced by default: files under the current directory, "
               "outside the standard library and site-packages")
    folder = os.path.basename(os.path.dirname(path))
    glob = f"*/{folder}/*" if os.path.basename(path) == "__init__.py" else \
        f"*/{os.path.basename(path)}"
    what = f"{module} ({path})" if module else path
    sys.stderr.write(f"snapstate: note: {what} will not be traced: {why}; "
                     f"to trace it add --include '{glob}'\n")


def _note_compiled(include: list[str], exclude: list[str]) -> None:
    """One note per package whose modules the trace rule selects but which are compiled to C
    (mypyc, Cython, C extensions): their code runs without Python frames, so no step comes
    from it. Read from ``sys.modules`` after the run, each module's ``__file__`` taken from its
    namespace (no module ``__getattr__`` runs). A catch-all glob (``--include '*'``) names no
    package: with it alone, nothing is noted (it listed thirty C modules, SnapState's own
    imports among them, for a program that used json and re). A package with Python modules
    selected too is not called untraceable: the note names its C module (PyYAML's
    ``yaml._yaml``; its pure-Python ``SafeLoader`` is traced)."""
    from importlib.machinery import EXTENSION_SUFFIXES

    from snapstate_capture.tracing.include import IncludeRule

    named = [glob for glob in include if glob.strip("*/") != ""]
    if not named:
        return
    rule = IncludeRule(named, exclude)
    compiled: dict[str, tuple[str, str]] = {}  # package -> its first C module, file
    python: set[str] = set()  # packages with a selected Python module loaded
    for name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        path = namespace.get("__file__") if isinstance(namespace, dict) else None
        top = name.partition(".")[0]
        if not isinstance(path, str) or not rule.includes(path):
            continue
        if path.endswith(tuple(EXTENSION_SUFFIXES)):
            compiled.setdefault(top, (name, path))
        elif path.endswith(".py"):
            python.add(top)
    for top, (name, path) in compiled.items():
        if top in python:  # PyYAML's _yaml beside its pure-Python loader: the rest is traced
            sys.stderr.write(f"snapstate: note: {name} is compiled to C "
                             f"({os.path.basename(path)}): its code runs without Python "
                             f"frames and cannot be traced; {top}'s Python modules are\n")
        else:
            sys.stderr.write(f"snapstate: note: {top} is compiled to C "
                             f"({os.path.basename(path)}): its code runs without Python "
                             "frames and cannot be traced\n")


def _default_output(label: str) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(".snapstate") / f"{label}-{stamp}"
    path, n = base.with_suffix(".snap"), 1
    while path.exists():
        n += 1
        path = Path(f"{base}-{n}.snap")
    return path


def _entry(module: str | None, target: str, argv: list[str], wrapper: dict[str, Any]
           ) -> dict[str, Any]:
    """How to start the program again; ``record`` holds this block's options, so replay runs
    the program inside the same kind of block (``environment.entry_facts``)."""
    facts = entry_facts()
    if module is not None:
        return {"kind": "module", "module": module, "argv": argv, "cwd": os.getcwd(),
                "env": facts.get("env", {}), "record": wrapper}
    return {"kind": "script", "path": os.path.abspath(target), "argv": argv, "cwd": os.getcwd(),
            "env": facts.get("env", {}), "record": wrapper, **script_name(target, target)}


def _report(block: record_block, output: str | Path) -> None:
    """Say where the run went and how to open it — unless it cannot be read there (the
    recorder said why: a reviewer's read-only role on a store was told to open a run that
    was never stored; steps still waiting in the spool for the store were said too)."""
    try:
        from snapstate_capture import open_timeline

        with open_timeline(output) as timeline:
            run = timeline.run(block.run_id) if block.run_id else timeline.runs[-1]
            summary = f"{len(run.steps)} steps, {run.status}"
    except Exception:  # noqa: BLE001 - the report line is best effort
        return
    from snapstate_capture.store.locations import location_label

    shown = location_label(output)  # a store URL without its password: never printed
    # to the process's own stderr, whatever the program left in sys.stderr (its stdout, a
    # file it opened)
    stream = sys.__stderr__ or sys.stderr
    try:
        stream.write(f"snapstate: {summary} -> {shown}\n"
                     f"snapstate: open it with: snapstate inspect {shown}\n")
        stream.flush()
    except (OSError, ValueError, AttributeError):
        pass
