"""Opening a (possibly hostile) timeline every way the project opens files, for the fuzz tests.

Each ``open_*`` function returns normally when the file was handled cleanly — read fine, or
refused with a ``TimelineError`` (one line, exit 2 on the command line) — and raises
``AssertionError`` for anything else: another exception type, a traceback, an "internal error",
a payload unpickled, or the file modified.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from pathlib import Path

import snapstate_capture as snap
from snapstate_inspect.cli import main

#: How far a walk goes: enough to touch every kind of row without making hostile
#: "a billion steps" claims cost time.
MAX_STEPS, MAX_VALUES = 30, 200


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def walk_reader(path: Path) -> None:
    """Read everything through the reader API; only ``TimelineError`` may escape."""
    try:
        with snap.open_timeline(path) as timeline:
            seen = 0
            for run in timeline.runs:
                (run.id, run.name, run.status, run.parent, run.entry, run.env, run.error,
                 run.duration, len(run.steps))
                timeline.run(run.id[:6])
                if run.steps.has_traced():  # the inspector's search, history and v/V scans
                    count = len(run.steps)
                    for _ in run.steps.scan_traced_matches(0, count, needle="a",
                                                           blob=lambda name, ref: None):
                        pass
                    for _ in run.steps.scan_traced_variable(1, "_traced_work", "n", 0, count,
                                                            backward=count % 2 == 0):
                        pass
                for step in run.steps[:MAX_STEPS]:
                    (step.index, step.kind, step.label, step.wall_time, step.thread, step.task,
                     step.function, step.filename, step.lineno, step.errors, step.n_changed)
                    values = list(step.extra.values())
                    for frame in step.frames:
                        (frame.function, frame.filename, frame.lineno, len(frame.source))
                        values.extend(frame.locals.values())
                    for value in values[:MAX_VALUES]:
                        seen += 1
                        (value.type_name, value.repr, value.preview, value.is_placeholder,
                         value.is_redacted, value.has_payload, value.digest)
                        try:
                            value.load()
                        except (snap.UntrustedPayloadError, snap.PayloadLoadError):
                            pass
                        else:
                            raise AssertionError("a payload loaded without trust")
    except snap.TimelineError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)


def run_command(*argv: str) -> tuple[int, str, str]:
    """Run ``snapstate argv`` in this process; return ``(exit code, stdout, stderr)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def check_command(path: Path, *argv: str, ok_codes: tuple[int, ...] = (0,)) -> int:
    """Run a command on ``path``: it succeeds (``ok_codes``) or fails with one clean line."""
    code, out, err = run_command(*argv, str(path))
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0], err[-2000:]
    else:
        assert code in ok_codes, (code, err[-2000:])
    assert "\x1b]" not in out and "\x9b" not in out
    return code


def open_every_way(path: Path) -> None:
    """Reader, ``ls``, ``show`` (human and JSON), ``verify``: all clean, file unchanged."""
    before = digest(path)
    walk_reader(path)
    check_command(path, "ls")
    check_command(path, "show")
    check_command(path, "show", "--json")
    check_command(path, "verify", ok_codes=(0, 1))
    assert digest(path) == before, "a reader modified the file"
