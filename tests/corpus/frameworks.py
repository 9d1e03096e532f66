"""Shared by the framework tests: record an example agent once, replay it in real children.

Every child gets the same environment: this checkout on ``PYTHONPATH``, a private config
directory (no user key: replays pass ``--trust``) and ``SNAPSTATE_EXAMPLE_COUNTS`` naming the
side file where the examples note each model and tool call that really ran.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import snapstate_capture as snap
from tests.conftest import ROOT


@dataclass
class Agent:
    """One example agent in a temporary directory: ``module`` (``examples.langgraph_agent``)."""

    module: str
    home: Path

    @property
    def counts(self) -> Path:
        return self.home / "counts.txt"

    def env(self, **extra: str) -> dict[str, str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(self.home / "cfg"),
               "SNAPSTATE_EXAMPLE_COUNTS": str(self.counts), **extra}
        env.pop("SNAPSTATE_KEY", None)
        return env

    def calls(self) -> list[str]:
        """The model and tool calls noted since the last ``reset``."""
        return self.counts.read_text().splitlines() if self.counts.exists() else []

    def reset(self) -> None:
        self.counts.unlink(missing_ok=True)

    def python(self, *args: str, input: str | None = None, timeout: float = 240,
               **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=ROOT, env=self.env(**env),
                              input=input, capture_output=True, text=True, timeout=timeout)

    def record(self, path: Path, *extra: str) -> subprocess.CompletedProcess:
        """Run the plain agent inside ``snap.record(path)`` (its ``--out``)."""
        return self.python("-m", self.module, "--out", str(path), *extra)

    def record_cli(self, path: Path, *extra: str) -> subprocess.CompletedProcess:
        """Run the agent, unchanged, under ``snapstate record``."""
        return self.python(*self.record_cli_args(path), *extra)

    def replay(self, path: Path, *args: str, input: str | None = None
               ) -> tuple[subprocess.CompletedProcess, dict | None]:
        result = self.python("-m", "snapstate_inspect", "replay", str(path), "--trust",
                             "--json", *args, input=input)
        return result, _report(result.stdout)

    def replays(self, path: Path, times: int) -> list[dict | None]:
        """``times`` replays at once (real children); their JSON results."""
        children = [subprocess.Popen(
            [sys.executable, "-m", "snapstate_inspect", "replay", str(path), "--trust",
             "--json"], cwd=ROOT, env=self.env(), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True) for _ in range(times)]
        out = []
        for child in children:
            stdout, _ = child.communicate(timeout=120)
            out.append(_report(stdout))
        return out

    def record_cli_args(self, path: Path) -> list[str]:
        """The ``snapstate record`` command line of ``record_cli`` (after ``python``)."""
        short = self.module.rsplit(".", 1)[-1]
        return ["-m", "snapstate_inspect", "record", "-o", str(path), "--include",
                f"*/{short}.py", "-m", self.module]

    def kill_during(self, path: Path, call: str, *extra: str,
                    after: str = "tool.read_notes", cli: bool = False) -> None:
        """Record with a slow weather service and SIGKILL the agent while ``call`` is in
        flight (once it is noted in the side file) and the effect step ``after`` (the fast
        tool of the same turn) is in the file. ``cli``: recorded under ``snapstate record``
        (traced), the recorder process killed."""
        command = (self.record_cli_args(path) if cli else
                   ["-m", self.module, "--out", str(path)])
        child = subprocess.Popen([sys.executable, *command, *extra], cwd=ROOT,
                                 env=self.env(SNAPSTATE_EXAMPLE_SLOW="30"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while call not in self.calls() and time.monotonic() < deadline:
            if child.poll() is not None:
                raise AssertionError(f"the agent ended early: {child.communicate()}")
            time.sleep(0.05)
        while time.monotonic() < deadline and not _has_label(path, after):
            time.sleep(0.1)
        child.send_signal(signal.SIGKILL)
        child.communicate()


def _has_label(path: Path, label: str) -> bool:
    try:
        with snap.open_timeline(path) as timeline:
            return any(step.label == label for step in timeline.runs[-1].steps)
    except (snap.SnapStateError, IndexError):
        return False  # not written yet


def steps(path: Path, run: int = -1) -> list:
    with snap.open_timeline(path) as timeline:
        return list(timeline.runs[run].steps)


def labels(path: Path, run: int = -1) -> list[tuple[int, str, str | None]]:
    return [(s.index, s.kind, s.label) for s in steps(path, run)]


def placeholders(path: Path) -> list[str]:
    """Every placeholder (whole value or part) in any frame local or step value of the file."""
    found = []
    with snap.open_timeline(path) as timeline:
        for run in timeline.runs:
            for step in run.steps:
                values = [(f"{f.function}.{k}", v) for f in step.frames
                          for k, v in f.locals.items()]
                values += [(f"step {step.index} {k}", v) for k, v in step.extra.items()]
                for name, value in values:
                    preview = value.preview or {}
                    if value.is_placeholder or preview.get("placeholders"):
                        found.append(f"step {step.index} {name}: {value.repr[:80]}")
    return found


def _report(stdout: str) -> dict | None:
    """The replay's ``--json`` report: the last block of ``stdout`` that starts with a line
    holding ``{`` alone (a pdb session or the program may print braces before it)."""
    start = stdout.rfind("\n{\n") + 1 if "\n{\n" in stdout else stdout.find("{\n")
    return json.loads(stdout[start:]) if start >= 0 else None
