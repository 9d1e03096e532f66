"""Shared by the replay tests: record the replay agent into a temporary directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import snapstate_capture as snap
from tests.conftest import PROGRAMS, run_cli, run_python


def record_agent(tmp_path: Path, rounds: int = 6, *, copy: bool = False) -> tuple[Path, Path, Path]:
    """Record ``replay_agent.py`` (copied into ``tmp_path`` when ``copy``, so a test may edit
    it); return ``(snap, side file, program)``."""
    program = PROGRAMS / "replay_agent.py"
    if copy:
        program = Path(shutil.copy(program, tmp_path / "agent.py"))
    path, side = tmp_path / "agent.snap", tmp_path / "side.txt"
    result = run_python(str(program), str(path), str(side), str(rounds), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return path, side, program


def side_lines(side: Path) -> list[str]:
    return side.read_text().splitlines() if side.exists() else []


def runs_json(path: Path) -> list[dict]:
    result = run_cli("ls", str(path), "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["runs"]


def replay_json(path: Path, *args: str, input: str | None = None):
    """``snapstate replay PATH --trust --json ARGS`` → (completed process, result dict)."""
    from tests.conftest import run_python as run

    result = run("-m", "snapstate_inspect", "replay", str(path), "--trust", "--json", *args,
                 input=input)
    start = result.stdout.find("{\n")
    data = json.loads(result.stdout[start:]) if start >= 0 else None
    return result, data


def recorded_local(path: Path, step: int, name: str, run: int = 0) -> str:
    with snap.open_timeline(path) as timeline:
        return timeline.runs[run].steps[step].frames[-1].locals[name].repr
