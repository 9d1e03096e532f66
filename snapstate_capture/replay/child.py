"""The replay child's main: install the session, then start the run's entry again.

Started by ``launch.replay`` as ``python …/snapstate_capture/replay/__main__.py CONFIG`` (a
script: no ``runpy`` frames beneath the program) in the run's recorded working directory.
The entry is one of (``environment.entry_facts``): a script (run as ``__main__`` with its
recorded ``argv``), a module (``-m``), or an importable workflow function called with
its recorded arguments (loading them needs trust). The session ends the process itself when
the replay's outcome is known; reaching the end of this function means the program never
started the recorded ``record`` block, or a fork ran to its end.
"""

from __future__ import annotations

import importlib
import inspect
import os
import runpy
import sys
from typing import Any

from ..errors import SnapStateError
from ..capture.hashseed import take_hidden_seed
from ..capture.script import run_script
from ..capture.start_depth import at_depth
from ..store.reader import Value
from .config import ReplayConfig
from .report import print_exit_message, steps
from .session import ReplaySession, install


def main(argv: list[str]) -> int:
    """Replay the run described by the config file ``argv[0]``; exits through the session."""
    if len(argv) != 1:
        sys.stderr.write("usage: python -m snapstate_capture.replay CONFIG\n")
        return 2
    take_hidden_seed()  # the program sees the environment it was recorded with
    config = ReplayConfig.load(argv[0])
    config.restore_pythonpath()
    try:
        session = ReplaySession(config)
    except SnapStateError as exc:
        _write_error(config, str(exc))
        return 2
    install(session)
    entry = session.run.entry
    outcome: BaseException | None = None
    try:
        start_entry(entry, session)
    except SystemExit as exc:
        if exc.code not in (0, None):
            outcome = exc
        if session.recorder is not None and session.recorder.live:  # (replaying: said at its end)
            print_exit_message(exc)
    except SnapStateError as exc:
        session.fail(str(exc))
    except BaseException as exc:  # noqa: BLE001 - reported; a fork shows its own traceback
        outcome = exc
        if session.recorder is None or not session.recorder.live:
            import traceback

            traceback.print_exc()
    recorder = session.recorder
    if recorder is None:
        session.fail(f"the program ended without starting the recorded run (record block "
                     f"#{session.block}): {_describe(outcome)}")
    if recorder is not None and recorder.live:
        from ..capture.waits import EXIT_PAUSED, Paused

        code = 0
        if isinstance(outcome, Paused):  # the continuation reached another wait
            status = "waiting" if outcome.pause.get("pause") == "wait" else "sleeping"
            code = EXIT_PAUSED
        else:
            status = "failed" if outcome is not None else "finished"
        what = "continuation" if session.config.lease else "fork"
        session.finish("ok", f"replayed {steps(session.fork['step'] + 1 if session.fork else 0)}"
                       f", then continued live as {what} {recorder.run_id} ({status})",
                       code, fork_status=status,
                       pause=outcome.pause if isinstance(outcome, Paused) else None)
    session.fail(f"the replay ended without reaching the end of the recorded run "
                 f"({_describe(outcome)})")
    return 2


def start_entry(entry: dict[str, Any], session: ReplaySession) -> None:
    """Run the program the way ``entry`` says it was started.

    An entry with ``"record": {keyword arguments}`` was recorded by a wrapper around the
    program (``snapstate record``): the program runs inside ``record(FILE, **those)`` again,
    block 0 of this process (the wrappers' own frames are snapstate's, hidden on both sides),
    after the traced modules the wrapper had imported (``_preload``).
    """
    wrapper = entry.get("record")
    if not isinstance(wrapper, dict):
        _start(entry, session)
        return
    _preload(entry.get("preloaded"))
    # The public name, so the framework integrations hook into this block as into the
    # recorded one (``snapstate_capture.__getattr__`` sets them up with ``record``).
    from .. import record

    try:
        block = record(session.config.file, **wrapper)
    except (TypeError, ValueError) as exc:
        session.fail(f"the run was recorded with options this snapstate does not know: {exc}")
        return
    with block:
        _start(entry, session)


def _preload(names: Any) -> None:
    """Import the traced modules the recording's wrapper had imported before the program
    (``entry["preloaded"]``, ``tracing.include.preloaded_modules``), so that their bodies run
    untraced here as they did there; one that no longer imports is left to the program."""
    if not isinstance(names, list):
        return
    for name in names:
        if isinstance(name, str) and name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the program's own import reports it, if it runs
                continue


def _start(entry: dict[str, Any], session: ReplaySession) -> None:
    kind = entry.get("kind")
    argv = [str(a) for a in entry.get("argv") or []]
    if kind == "script":
        recorded = entry.get("path") or ""
        path = session.relocation.path(recorded)
        if not os.path.isfile(path):
            session.fail(f"the run's script {path} no longer exists")
        typed = entry.get("argv0")  # the name it was started by, where it still names it:
        # unmoved, or relative (the replay runs in the moved copy of the recorded directory)
        kept = isinstance(typed, str) and (path == recorded or not os.path.isabs(typed))
        sys.argv = [typed if kept else path, *argv]
        sys.path[0] = os.path.dirname(path)
        # the ``__main__`` that ``snapstate record`` ran it in, on a stack as deep
        at_depth(entry.get("start_depth"), run_script)(path)
    elif kind == "module":
        sys.argv = [str(entry.get("module")), *argv]
        sys.path[0] = os.getcwd()
        at_depth(entry.get("start_depth"), runpy.run_module)(
            str(entry.get("module")), run_name="__main__", alter_sys=True)
    elif kind == "function":
        sys.argv = [str(entry.get("qualname")), *argv]
        sys.path[0] = os.getcwd()
        target: Any = importlib.import_module(str(entry["module"]))
        for part in str(entry["qualname"]).split("."):
            target = getattr(target, part)
        ref = entry.get("args") or {}
        args, kwargs = Value(session.timeline, "arguments", ref).load(
            trust=session.config.trust)
        result = at_depth(entry.get("start_depth"), target)(*args, **kwargs)
        if inspect.iscoroutine(result):
            import asyncio  # here, not at the top: the program imports it, not the replay

            asyncio.run(result)
    else:
        session.fail("the run has no replayable entry (it was not started from a script, "
                     "a module or an importable function)")


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "it exited normally"
    return f"{type(exc).__name__}: {exc}"


def _write_error(config: ReplayConfig, message: str) -> None:
    import json

    with open(config.result, "w", encoding="utf-8") as handle:
        json.dump({"status": "error", "message": message, "replayed": 0, "total": 0,
                   "fork": None}, handle)
