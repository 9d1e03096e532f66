"""Shared fixtures: temporary timeline paths and small recorded programs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = Path(__file__).resolve().parent / "programs"


@pytest.fixture(autouse=True)
def isolated_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty config directory: no user key unless the test makes one
    (``snapstate keygen`` / ``keys.generate_key``), and the real ~/.config is never touched.
    Child processes started with ``run_python``/``run_cli`` inherit it."""
    config = tmp_path / "user-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.delenv("SNAPSTATE_KEY", raising=False)
    return config


@pytest.fixture
def no_key_can_be_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home where the user key cannot be created (its config directory would be inside a
    regular file — as a read-only home, but one that root cannot write either): runs are
    recorded unsigned, with one warning per process (the latch is reset for the test)."""
    from snapstate_capture.trust import keys

    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocker / "config"))
    monkeypatch.setattr(keys, "_unsigned_warned", False)
    return blocker


@pytest.fixture
def snap_path(tmp_path: Path) -> Path:
    """A path for a new timeline file inside a fresh temporary directory."""
    return tmp_path / "run.snap"


def run_python(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
               input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``python args...`` in a child process and return the completed process (text mode)."""
    full_env = {**os.environ, **(env or {})}
    # Children import this checkout's code, whichever checkout the tests run from.
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), full_env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=full_env, input=input,
                          capture_output=True, text=True, timeout=timeout)


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run the ``snapstate`` command (as ``python -m snapstate_inspect``) in a child process."""
    return run_python("-m", "snapstate_inspect", *args, cwd=cwd, env=env, input=input,
                      timeout=timeout)


def record_traced_script(tmp_path: Path, name: str, source: str) -> Path:
    """Write ``source`` to ``tmp_path/name`` and record it with ``snapstate record --trace
    calls`` (the script itself traced) into ``tmp_path/<stem>.snap``; returns that path."""
    (tmp_path / name).write_text(source)
    path = tmp_path / (Path(name).stem + ".snap")
    done = run_cli("record", "--trace", "calls", "--include", f"*/{name}", "-o", str(path),
                   name, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return path


def count_calls(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list:
    """Replace ``owner.name`` (for the test) with a wrapper that calls it and notes each
    call's first argument; returns that list (``.counting``: the wrapper, ``.original``: the
    function, to set either back)."""
    original = getattr(owner, name)

    class Calls(list):
        pass

    calls = Calls()

    def counting(first, *args, **kwargs):
        calls.append(first)
        return original(first, *args, **kwargs)

    calls.counting, calls.original = counting, original
    monkeypatch.setattr(owner, name, counting)
    return calls


def cli_on_a_terminal(*args: str, cwd: Path, columns: int = 100,
                      stdout_too: bool = False) -> tuple[int, str | None, str]:
    """``snapstate ARGS`` with stderr (and, with ``stdout_too``, stdout) on a pseudo-terminal:
    ``(exit code, stdout or None when it was on the terminal, what the terminal got)``."""
    import pty
    import select

    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns)}
    proc = subprocess.Popen([sys.executable, "-m", "snapstate_inspect", *args], cwd=cwd,
                            env=env, stdin=subprocess.DEVNULL,
                            stdout=slave if stdout_too else subprocess.PIPE, stderr=slave,
                            text=True)
    os.close(slave)
    chunks = []
    while select.select([master], [], [], 120)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:  # the other side closed
            break
        if not data:
            break
        chunks.append(data)
    out = None if stdout_too else proc.stdout.read()
    proc.wait(timeout=60)
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode("utf-8", "replace")


def _summing_loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def record_traced_loop(path: Path, n: int) -> None:
    """Record ``n`` turns of a three-line summing loop (``total``, ``i``) with line tracing into
    ``path``: about ``2 * n`` line steps, the last ``total`` being ``sum(range(n))``."""
    import snapstate_capture as snap

    with snap.record(path, trace="lines", include=[__file__]):
        _summing_loop(n)
