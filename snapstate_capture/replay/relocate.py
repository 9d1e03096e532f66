"""Replaying a run recorded in another directory: another checkout, another machine.

A run records absolute paths: its working directory, its script, the files on its stacks and
its effects' call sites. When that directory is gone, or no longer holds the recorded program,
but a copy of the program lives elsewhere — a fresh clone of a repository whose committed
timelines were recorded on someone else's machine — replay runs from the copy and maps every
recorded path under the old directory to the same relative path under the new one.

The program is looked for in the timeline file's directory and its parents first
(``sample_snapshots/x.snap`` inside a checkout finds that checkout), then in the recorded
directory, then in the current one. A directory qualifies when every recorded file that lay
under the recorded directory exists under it; drift (``drift.py``) then compares their text.
One of the timeline's directories qualifies only when the timeline lies in it where it lay
in the recorded directory (the run's entry keeps where it was: ``"timeline"``): another file
of the same name above a timeline written elsewhere took the replay over from the program
where it was recorded (helper-39: 2 of 2). Files recorded before that was kept skip the check.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..store.locations import is_store_url
from ..store.reader import Run


@dataclass(frozen=True)
class Relocation:
    """Maps paths under the recorded directory ``old`` to the same place under ``new``.

    ``old == new`` means no relocation (the usual case): every method returns its input.
    """

    old: str
    new: str

    @property
    def moved(self) -> bool:
        return self.old != self.new

    def path(self, path: str) -> str:
        """``path`` under ``new`` when it lay under ``old``; otherwise unchanged."""
        if not self.moved or not path:
            return path
        if path == self.old:
            return self.new
        prefix = self.old.rstrip(os.sep) + os.sep
        if path.startswith(prefix):
            return os.path.join(self.new, path[len(prefix):])
        return path

    def site(self, site: str) -> str:
        """An effect call site ``"qualname /abs/file.py:line"`` with its file relocated."""
        if not self.moved:
            return site
        function, space, where = site.rpartition(" ")
        filename, colon, line = where.rpartition(":")
        if not colon:
            return site
        return f"{function}{space}{self.path(filename)}:{line}"


def recorded_files(run: Run, root: str) -> list[str]:
    """The files on the run's saved stacks that lay under ``root`` (absolute paths)."""
    prefix = root.rstrip(os.sep) + os.sep
    files = [os.path.normpath(os.path.join(root, name)) for name in run.source_files()
             if not name.startswith("<")]
    return [name for name in files if name.startswith(prefix)]


def _holds(files: list[str], relocation: Relocation) -> bool:
    return all(os.path.isfile(relocation.path(name)) for name in files)


def _carried(run: Run, timeline: str, candidate: str, recorded: str) -> bool:
    """Whether ``timeline`` lies in ``candidate`` where it lay in the ``recorded`` directory
    when the run was recorded (a copy of that directory carried it along); True for a run
    recorded before its entry kept where its timeline was."""
    was = run.entry.get("timeline")
    if not isinstance(was, str):
        return True
    # both sides as the file system resolves them: the recorded directory is ``getcwd()``'s,
    # a path with no symbolic link in it (helper-41: a project under a linked directory)
    then = os.path.relpath(was, os.path.realpath(recorded))
    return (not then.startswith(os.pardir)
            and os.path.relpath(os.path.realpath(timeline), os.path.realpath(candidate)) == then)


def relocation_for(run: Run, here: str | None = None) -> Relocation:
    """Where to replay ``run`` from.

    The first directory that holds every recorded file that lay under the run's recorded
    directory, among: the timeline file's directory and its parents (nearest first; those in
    which the timeline lies where it lay in the recorded directory: ``_carried``), the
    recorded directory, ``here`` (default: the current directory). So a timeline committed
    inside a checkout replays that checkout's code. With no such directory (or no recorded
    file under the recorded directory), the recorded directory if it exists, else ``here``;
    drift then lists what is missing.
    """
    here = os.path.abspath(here or os.getcwd())
    recorded = str(run.entry.get("cwd") or here)
    fallback = Relocation(recorded, recorded if os.path.isdir(recorded) else here)
    files = recorded_files(run, recorded)
    if not files:
        return fallback
    candidates = [recorded, here]
    if not is_store_url(run.timeline.location):  # a store lies in no directory of the project
        timeline = Path(run.timeline.location).absolute()
        candidates[:0] = [str(p) for p in timeline.parents
                          if _carried(run, str(timeline), str(p), recorded)]
    for candidate in dict.fromkeys(candidates):
        relocation = Relocation(recorded, candidate)
        if _holds(files, relocation):
            return relocation
    return fallback
