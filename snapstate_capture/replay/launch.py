"""Starting a replay from another process: the parent side of ``snapstate replay``.

``replay(...)`` writes the child's config, starts the replay child (``CHILD_MAIN``) in
the run's recorded working directory with its recorded environment variables, lets it use the
terminal (pdb and the console need it), waits, and returns the child's result dict (see
``session.ReplaySession.finish``). The caller checks drift and trust first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import snapstate_capture

from ..errors import SnapStateError
from ..capture.address_layout import children_like
from ..capture.hashseed import child_seed_env
from ..store.locations import is_store_url
from ..store.reader import Run
from .config import MODES, ReplayConfig
from .relocate import relocation_for

#: The directory that holds the ``snapstate_capture`` package: the child must import this copy.
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(snapstate_capture.__file__)))
#: The replay child, started as a script rather than with ``-m``: ``runpy``'s frames would be
#: beneath the program, deeper than ``snapstate record`` started it (``capture/start_depth``).
CHILD_MAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__main__.py")


#: Said with a divergence of a run recorded under a random hash secret (``hashseed.py``).
RANDOM_SEED_NOTE = ("the run was recorded with a random hash seed (PYTHONHASHSEED unset in a "
                    "process that called record()): the replay runs under another one, so "
                    "the order of sets of strings may differ; record with PYTHONHASHSEED=N "
                    "set, or under `snapstate record`, to replay it exactly")


#: Said with a divergence whose differing values are all numbers with a fraction, in a run not
#: recorded with ``--patch-nondeterminism``: clock readings are the usual cause (tenacity's
#: ``RetryCallState.start_time``, a cache's timestamps; helper-36).
UNPATCHED_NOTE = ("the values that differ are fractional numbers, as clock readings are: a "
                  "run records clocks, random draws and uuids in its effect journal only when "
                  "recorded with --patch-nondeterminism (record(..., patch_nondeterminism=True)); "
                  "record it so to replay them")


def _read_numbers_differ(result: dict[str, Any], run: Run) -> bool:
    """Whether ``result`` is a value divergence whose every differing leaf reads as a
    fractional number on both sides, in a run not recorded with nondeterminism patched."""
    record = run.entry.get("record")
    if isinstance(record, dict) and record.get("patch_nondeterminism"):
        return False
    found = result.get("divergence") or {}
    if found.get("reason") != "value":
        return False
    leaves = [leaf for variable in found.get("variables") or ()
              for leaf in (variable.get("diff") or ())]
    return bool(leaves) and all(_fractional(leaf[1]) and _fractional(leaf[2])
                                for leaf in leaves if len(leaf) == 3)


def _fractional(text: Any) -> bool:
    try:
        return isinstance(text, str) and "." in text and float(text) == float(text)
    except ValueError:
        return False


class ReplayError(SnapStateError):
    """A replay could not be started or ended without a result."""


def program_pythonpath(run: Run) -> str | None:
    """The ``PYTHONPATH`` the replayed program sees in ``os.environ``: the recorded one, else
    this process's (None: unset) — as any variable, without the entry ``child_environment``
    puts first for the child's own imports (the child sets it back: ``ReplayConfig``)."""
    recorded = run.entry.get("env") or {}
    if "PYTHONPATH" in recorded:
        return str(recorded["PYTHONPATH"])
    return os.environ.get("PYTHONPATH")


def child_environment(run: Run) -> dict[str, str]:
    """This process's environment with the run's recorded variables set again, and a
    ``PYTHONPATH`` that finds this snapstate first, then the recorded one, and the run's
    recorded ``PYTHONHASHSEED`` (``hashseed.child_seed_env``)."""
    env = dict(os.environ)
    recorded = {str(k): str(v) for k, v in (run.entry.get("env") or {}).items()}
    paths = [_PACKAGE_ROOT, recorded.pop("PYTHONPATH", ""), env.get("PYTHONPATH", "")]
    env.update(recorded)
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in paths if p))
    child_seed_env(run.entry, env)
    return env


def replay(run: Run, *, to: int | None = None, mode: str = "check",
           live_effects: list[str] | None = None, trust: bool = False,
           progress: bool = True, capture_output: bool = False,
           listen: str = "127.0.0.1:5678",
           on_progress: Callable[[int, int], None] | None = None,
           lease: dict[str, Any] | None = None, resume: dict[str, Any] | None = None,
           name: str | None = None, remap_lines: bool = False) -> dict[str, Any]:
    """Replay ``run`` in a child process and return its result dict.

    ``mode``: ``check`` | ``pdb`` | ``console`` | ``debugpy`` | ``live`` | ``resume`` (what
    happens at step ``to``; ``debugpy`` waits for a DAP client on ``listen``).
    ``capture_output``: collect the child's stdout/stderr into ``result["output"]`` instead of
    sharing the terminal. Raises ``ReplayError`` when the child cannot be started or leaves no
    result (the message names the file and the exit code). ``on_progress(done, total)`` is
    called about ten times a second with the steps replayed so far (the child then prints no
    progress of its own). ``lease``, ``resume``, ``name``: for resuming a run
    (``durable/resume.py``, see ``ReplayConfig``).
    """
    if mode not in MODES:
        raise ReplayError(f"unknown replay mode {mode!r}")
    cwd = relocation_for(run).new
    if not os.path.isdir(cwd):
        raise ReplayError(f"{run.timeline.path}: the run's working directory {cwd} is gone")
    with tempfile.TemporaryDirectory(prefix="snapstate-replay-") as scratch:
        config = ReplayConfig(file=_location(run), run=run.id,
                              result=os.path.join(scratch, "result.json"), to=to, mode=mode,
                              live_effects=list(live_effects or []), trust=trust,
                              progress=progress, listen=listen,
                              progress_file=os.path.join(scratch, "progress")
                              if on_progress else None, lease=lease, resume=resume, name=name,
                              remap_lines=remap_lines, pythonpath=program_pythonpath(run))
        config_path = os.path.join(scratch, "config.json")
        config.dump(config_path)
        command = [sys.executable, CHILD_MAIN, config_path]
        try:
            if on_progress is None:
                child = _run(command, cwd, child_environment(run), run.entry, capture_output)
            else:
                total = len(run.steps) if to is None else to + 1
                child = _run_watching(command, cwd, child_environment(run), run.entry,
                                      config.progress_file, total, on_progress)
        except OSError as exc:
            raise ReplayError(f"{run.timeline.path}: cannot start the replay: {exc}") from None
        try:
            with open(config.result, encoding="utf-8") as handle:
                result: dict[str, Any] = json.load(handle)
        except (OSError, json.JSONDecodeError):
            detail = (child.stderr or "").strip().splitlines()[-1:] if capture_output else []
            raise ReplayError(
                f"{run.timeline.path}: the replay ended (exit code {child.returncode}) without "
                f"a result" + (f": {detail[0]}" if detail else "")) from None
    result["exit_code"] = child.returncode
    if on_progress is not None:
        on_progress(int(result.get("replayed") or 0), int(result.get("total") or 0))
    if (result.get("status") == "divergence" and "hash_seed" in run.entry
            and run.entry.get("hash_seed") is None):  # a likely cause, said where it matters
        result.setdefault("notes", []).append(RANDOM_SEED_NOTE)
    if result.get("status") == "divergence" and _read_numbers_differ(result, run):
        result.setdefault("notes", []).append(UNPATCHED_NOTE)
    if capture_output:
        result["output"] = child.stdout
        result["errors"] = child.stderr
    return result


def _start(command: list[str], cwd: str, env: dict[str, str], entry: dict[str, Any],
           **options: Any) -> subprocess.Popen:
    """Start the replay child with the recording's address layout (``address_layout``: its
    interpreter's objects where the recording's were)."""
    with children_like(entry):
        return subprocess.Popen(command, cwd=cwd, env=env, **options)


def _run(command: list[str], cwd: str, env: dict[str, str], entry: dict[str, Any],
         capture_output: bool) -> subprocess.CompletedProcess:
    """Run the child to its end, its output collected when ``capture_output``."""
    pipe = subprocess.PIPE if capture_output else None
    with _start(command, cwd, env, entry, stdout=pipe, stderr=pipe, text=True) as child:
        try:
            out, err = child.communicate()
        except BaseException:  # as subprocess.run: Ctrl-C here ends the child too
            child.kill()
            raise
    return subprocess.CompletedProcess(command, child.returncode, out, err)


def _run_watching(command: list[str], cwd: str, env: dict[str, str], entry: dict[str, Any],
                  progress_file: str, total: int, on_progress: Callable[[int, int], None]
                  ) -> subprocess.CompletedProcess:
    """Run the child sharing the terminal, reading its progress file ten times a second."""
    done = 0
    with _start(command, cwd, env, entry) as child:
        while child.poll() is None:
            try:
                with open(progress_file, encoding="ascii") as handle:
                    done = max(done, int(handle.read().strip() or 0))
            except (OSError, ValueError):
                pass  # not written yet, or caught between truncation and write
            on_progress(done, total)
            time.sleep(0.1)
    return subprocess.CompletedProcess(command, child.returncode)


def _location(run: Run) -> str:
    """What the child opens: the file's absolute path, or the store's URL as given."""
    location = run.timeline.location
    if is_store_url(location):
        return location
    return str(Path(location).resolve())
