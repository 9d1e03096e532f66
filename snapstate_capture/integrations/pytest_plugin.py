"""The pytest plugin: a timeline of every failing test (``pytest --snapstate[=calls|lines]``).

Registered through the ``pytest11`` entry point and off unless ``--snapstate`` is given (then it
costs nothing but this module's import). With it, each test's call phase runs inside
``snap.record(..., trace=MODE)`` (``calls`` by default, ``lines`` for every line of your code)
into a scratch file; a test that passes leaves nothing (its scratch file is deleted, and so is
an older timeline of it), a test that fails keeps its timeline as
``.snapstate/tests/<test id>.snap`` under the rootdir — one per test, named after it. At the end
pytest prints one line per failure with the command that opens it at the failing step::

    snapstate: tests/test_agent.py::test_plan failed: snapstate .snapstate/tests/tests-test_agent.py--test_plan.snap --step 41

Works with pytest-xdist: each worker records its own tests (distinct files), and the line
reaches the controller in the report's ``user_properties``. The recorded code is what
``record``'s default includes (files under the current directory, outside the standard library
and site-packages), so pytest's own machinery is not traced; ``--snapstate-include GLOB``
(repeatable) traces exactly the matching files instead — an installed library's, with the
tests' own — and ``--snapstate-exclude GLOB`` leaves files out.

What it costs a passing test: the tracing itself. Each test is recorded *held*
(``snap.record(held=True)``): its steps wait in memory — checkpoints and effects too, their
step indexes counted in the test's process — and no file, run or writer process is made unless
the test fails (then the run is written whole) or its held steps pass 64 MB (then it is written
as it goes and deleted if the test passes).

Hypothesis' deadline is off while tests are recorded (``hypothesis_deadline.py``): a recorded
example runs tens of times slower than a plain one, and a deadline would fail tests that pass.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

#: ``user_properties`` key carrying "path, step" of a kept timeline to the controller.
PROPERTY = "snapstate_timeline"
MODES = ("calls", "lines")
_UNSAFE = re.compile(r"[^A-Za-z0-9._\[\]=+-]+")
_MAX_NAME = 150
#: How many steps before the end ``failing_step`` looks at (a lines-mode run can be huge).
_LOOK_BACK = 5000


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("snapstate", "SnapState timelines of failing tests")
    group.addoption("--snapstate", nargs="?", const="calls", default=None,
                    metavar="calls|lines",
                    help="record each test (call tracing by default, or every line) and keep "
                         "the timelines of failing tests under .snapstate/tests/")
    group.addoption("--snapstate-include", action="append", default=[], metavar="GLOB",
                    help="trace exactly the files matching GLOB instead of the code under the "
                         "current directory (repeatable; as `snapstate record --include`): "
                         "e.g. '*/mylib/*' 'tests/*' to see an installed library's frames")
    group.addoption("--snapstate-exclude", action="append", default=[], metavar="GLOB",
                    help="never trace the files matching GLOB (repeatable)")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    """``pytest --snapstate tests/`` means calls mode on ``tests/``: a bare ``--snapstate``
    followed by something that is not a mode takes no value (argparse would take the path)."""
    for position, arg in enumerate(args):
        if arg == "--snapstate" and (position + 1 == len(args) or args[position + 1] not in MODES):
            args[position] = "--snapstate=calls"


@pytest.hookimpl(trylast=True)  # after conftests' own configure: a profile they load
def pytest_configure(config: pytest.Config) -> None:
    mode = config.getoption("snapstate", default=None)
    if mode is None:
        return
    if mode not in MODES:
        raise pytest.UsageError(f"--snapstate={mode}: expected one of {', '.join(MODES)}")
    _fix_hash_seed(config)
    config.pluginmanager.register(TimelinePlugin(config, mode), "snapstate-timelines")
    from . import hypothesis_deadline

    hypothesis_deadline.lift_while_recording()


def _fix_hash_seed(config: pytest.Config) -> None:
    """A known string-hash seed for the processes that run the tests, so a kept timeline
    replays set and dict order exactly (``capture/hashseed.py``): pytest-xdist's workers,
    started after this, get one chosen here — hidden from the tests, as ``snapstate record``
    hides its own — and take it back out of their environment. A single pytest process keeps
    the hash secret it started with (``pytest_terminal_summary`` says how to fix it)."""
    from ..capture import hashseed

    if getattr(config, "workerinput", None) is not None:
        hashseed.take_hidden_seed()
        return
    workers = config.getoption("numprocesses", default=None)
    if not workers or workers == "0" or hashseed.recorded_seed() is not None:
        return
    if hashseed.HIDDEN_ENV not in os.environ and hashseed.SEED_ENV not in os.environ:
        hashseed.hide_chosen_seed(os.environ)


#: A scratch timeline's name: ``.recording-<worker>-<pid>-<test>.snap`` (+ SQLite's files).
_SCRATCH_NAME = re.compile(r"^\.recording-[^-]+-(\d+)-")


def _remove_orphaned_scratch(directory: Path) -> None:
    """Remove the scratch timelines of pytest processes that are gone: a run killed while a
    test was recorded left its test's file (helper-37: 56 and 185 MB, a test's held steps
    spilled to disk), which no later run, under another pid, removed. Never raises."""
    from ..store.processes import process_gone

    try:
        names = [entry.name for entry in os.scandir(directory)]
    except OSError:
        return
    for name in names:
        found = _SCRATCH_NAME.match(name)
        if found is not None and process_gone(int(found[1])):
            try:
                os.unlink(directory / name)
            except OSError:
                pass


def timeline_name(nodeid: str) -> str:
    """A file name for the test ``nodeid``: its id with path separators and ``::`` turned into
    ``-``/``--`` and anything else unsafe into ``_``; ids longer than 150 characters are cut
    and end with 8 hex digits of their hash, so names stay unique."""
    name = _UNSAFE.sub("_", nodeid.replace("::", "--").replace("/", "-").replace("\\", "-"))
    if len(name) > _MAX_NAME:
        name = name[:_MAX_NAME - 9] + "-" + hashlib.sha256(nodeid.encode()).hexdigest()[:8]
    return name + ".snap"


class TimelinePlugin:
    """Records each test into a scratch timeline and keeps the failing ones (see the module
    docstring). ``kept``: ``[(nodeid, path, step)]`` in the order failures were reported."""

    def __init__(self, config: pytest.Config, mode: str) -> None:
        self.mode = mode
        self.directory = Path(config.rootpath) / ".snapstate" / "tests"
        #: pytest-xdist gives its workers ``workerinput``; the controller prints the lines.
        self.worker_input = getattr(config, "workerinput", None)
        worker = (self.worker_input or {}).get("workerid", "main")
        #: A test's held recording reaches its file only when the test fails (``keep``): it
        #: is written under this hidden name beside the kept timelines, then renamed.
        self.scratch_prefix = f".recording-{worker}-{os.getpid()}-"
        if self.worker_input is None:
            _remove_orphaned_scratch(self.directory)
        self.kept: list[tuple[str, str, int]] = []
        self.include = tuple(config.getoption("snapstate_include", default=None) or ())
        self.exclude = tuple(config.getoption("snapstate_exclude", default=None) or ())
        self._entry_base = self._session_entry(config.invocation_params)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        import snapstate_capture as snap

        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{self.scratch_prefix}{timeline_name(item.nodeid)}"
        path.unlink(missing_ok=True)
        item.stash[_SCRATCH] = path
        block = snap.record(path, name=item.nodeid, trace=self.mode, held=True,
                            include=self.include, exclude=self.exclude,
                            entry=self.replay_entry(item))
        item.stash[_BLOCK] = block
        item.stash[_RUNNING] = True
        try:
            block.__enter__()
            try:
                result = yield
            except BaseException as exc:
                block.__exit__(type(exc), exc, exc.__traceback__)
                raise
            caught = _caught_failure(item)  # a unittest test's: the run ends failed with it
            block.__exit__(type(caught) if caught else None, caught,
                           caught.__traceback__ if caught else None)
            return result
        finally:
            item.stash[_RUNNING] = False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        report = yield
        if report.when != "call":
            return report
        if item.stash.get(_RUNNING, False):
            # a report made while the test still runs is a subtest's (pytest-subtests makes
            # one per ``with subtests.test():``): the test's own report decides its timeline,
            # kept if a subtest failed
            if report.failed:
                item.stash[_SUBTEST_FAILED] = True
            return report
        failed = report.failed or _take(item, _SUBTEST_FAILED) is not None
        # Taken out of the item: pytest keeps every item to the end of the session, and a
        # finished block still holds its recorder (~110 objects that each later gc pass walks).
        scratch: Path | None = _take(item, _SCRATCH)
        block = _take(item, _BLOCK)
        final = self.directory / timeline_name(item.nodeid)
        if block is not None:
            # Only a failure's steps are written; a passing test's are dropped from memory.
            block.keep() if failed else block.discard()
        if failed and scratch is not None and scratch.exists():
            os.replace(scratch, final)
            report.user_properties.append((PROPERTY, [str(final), *failing_step(final)]))
        else:
            if scratch is not None:
                scratch.unlink(missing_ok=True)
            if report.passed:
                final.unlink(missing_ok=True)  # an older failure of this test is gone
        return report

    def pytest_report_header(self) -> str:
        import importlib.util

        from ..capture.api import replaying

        if replaying():  # ``snapstate replay`` of a kept timeline: nothing is kept this time
            return ("snapstate: replaying this test's timeline (effects served from it, each "
                    "step checked against it)")
        deadline = ("; Hypothesis deadlines are off while recording"
                    if importlib.util.find_spec("hypothesis") is not None else "")
        return (f"snapstate: recording each test ({self.mode}), the timelines of failing tests "
                f"kept in {self.directory}{deadline}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, value in getattr(report, "user_properties", ()):
            if key == PROPERTY:
                path, step, call = value  # (``failing_step``'s pair after the path)
                self.kept.append((report.nodeid, str(path), int(step),
                                  None if call is None else int(call)))

    def replay_entry(self, item: pytest.Item) -> dict[str, Any]:
        """How replay starts this test again (``entry_facts``' form): ``python -m pytest`` on
        this test alone, recorded the same way (its record block is then the process's
        first), with output capture off so ``replay --pdb`` can talk to the terminal, and the
        invocation's options that decide what pytest loads. An xdist worker has no entry of
        its own to start again; this one does."""
        nodeid = item.nodeid.split("::", 1)
        test = str(item.path) + ("::" + nodeid[1] if len(nodeid) > 1 else "")
        base = self._entry_base
        return {**base, "argv": [*base["argv"], test], "env": dict(base["env"])}

    def _session_entry(self, invocation: Any) -> dict[str, Any]:
        """What every test's ``replay_entry`` shares, taken once: the directory pytest was
        started in, its options that decide what it loads, the environment it was started
        with (a replay's pytest runs the test's fixtures again)."""
        from ..capture.environment import chosen_env

        argv = ["-p", "no:cacheprovider", "--capture=no", f"--snapstate={self.mode}",
                *(f"--snapstate-include={glob}" for glob in self.include),
                *(f"--snapstate-exclude={glob}" for glob in self.exclude),
                *_loading_options(invocation.args)]
        env = chosen_env(None)
        env.update({name: os.environ[name] for name in _PLUGIN_VARIABLES if name in os.environ})
        return {"kind": "module", "module": "pytest", "argv": argv, "cwd": str(invocation.dir),
                "env": env, "block": 0}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker_input is not None:
            return  # the controller prints the lines it received
        for nodeid, path, step, call in self.kept:
            shown = shlex.quote(os.path.relpath(path) if not path.startswith("..") else path)
            pdb = (f"; in pdb at its frame: snapstate replay {shown} --to {call} --pdb"
                   if call is not None else "")
            terminalreporter.write_line(
                f"snapstate: {nodeid} failed: snapstate {shown} --step {step}{pdb}")
        from ..capture.hashseed import recorded_seed

        if self.kept and getattr(terminalreporter.config.option, "numprocesses", None) in (
                None, 0, "0") and recorded_seed() is None:
            terminalreporter.write_line(
                "snapstate: recorded under a random string-hash seed: run pytest with "
                "PYTHONHASHSEED=0 (or -n) for timelines that replay set order exactly")


_SCRATCH = pytest.StashKey[Path]()
_BLOCK = pytest.StashKey[Any]()
_RUNNING = pytest.StashKey[bool]()
_SUBTEST_FAILED = pytest.StashKey[bool]()


#: Environment variables that decide which plugins pytest loads: a replay keeps them (with
#: autoloading off, ``-p`` names this plugin; with it on, it would be loaded twice).
_PLUGIN_VARIABLES = ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_PLUGINS")
#: pytest options that decide what a run loads and from where: a replay keeps them.
_LOADING = ("-c", "-p", "-o", "-W", "--rootdir", "--confcutdir", "--import-mode")


def _loading_options(args: Any) -> list[str]:
    """The ``_LOADING`` options among pytest's invocation ``args`` (``-p X``, ``-pX``,
    ``--rootdir=X``, ``--rootdir X``), in order; test paths, ``-n`` and the rest are left."""
    kept: list[str] = []
    args = [str(arg) for arg in args]
    position = 0
    while position < len(args):
        arg = args[position]
        if arg in _LOADING and position + 1 < len(args):
            kept += [arg, args[position + 1]]
            position += 2
            continue
        if any(arg.startswith(name + "=") for name in _LOADING if name.startswith("--")) or \
                (len(arg) > 2 and arg[:2] in _LOADING and not arg.startswith("--")):
            kept.append(arg)
        position += 1
    return kept


def _take(item: pytest.Item, key: pytest.StashKey[Any]) -> Any:
    """``item.stash[key]`` removed from the stash, or None when it is not there."""
    value = item.stash.get(key, None)
    if value is not None:
        del item.stash[key]
    return value


def _caught_failure(item: pytest.Item) -> BaseException | None:
    """The failure or error a ``unittest.TestCase`` test had, which unittest caught and pytest
    keeps on the item (``_excinfo``) to report after the call: the test's run ends ``failed``
    with it, its last step that exception, as a test function's that raised. None for a skip
    or an expected failure, and for every other kind of test."""
    for info in getattr(item, "_excinfo", None) or ():
        exc = getattr(info, "value", None)
        if isinstance(exc, BaseException) and not isinstance(
                exc, (pytest.skip.Exception, pytest.xfail.Exception)):
            return exc
    return None


def failing_step(path: Path) -> tuple[int, int | None]:
    """``(step, call)``: the step to open a failing test's timeline at, where its exception was
    raised — the first exception step at the function and line of the run's last exception
    step (the one the record block ends with) — else the last step (0 when the file cannot be
    read); and the call step of that step's frame, where ``replay --to CALL --pdb`` stops on
    it (a traced replay stops at calls, not at exceptions), or None."""
    import snapstate_capture as snap
    from ..replay.traced_stop import call_of_frame

    try:
        with snap.open_timeline(path) as timeline:
            every = timeline.runs[-1].steps
            steps = list(every[max(len(every) - _LOOK_BACK, 0):len(every)])
            raised = [s for s in steps if s.kind == "exception"]
            if not raised:
                return max(len(every) - 1, 0), None
            last = raised[-1]
            step = next(s.index for s in raised
                        if (s.function, s.lineno) == (last.function, last.lineno))
            call = call_of_frame(every, step)
            return step, call.index if call is not None else None
    except Exception:  # noqa: BLE001 - the line is still printed, at step 0
        return 0, None
