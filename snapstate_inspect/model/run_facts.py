"""What two runs were started with, side by side: the facts ``snapstate diff`` lists before
their steps, so that "the runs differ from step 5" comes with "because B ran with argv 4".

A run's header holds how it was started (``Run.entry``: the program, its arguments, working
directory, hash seed, what was traced) and where (``Run.env``: Python, the versions of the
packages it recorded). Facts that differ in every run by nature — a pid, a start time — are
left out. A hash seed counts whenever both runs say theirs: ``snapstate record`` draws one
for each recording (and stores it, for replay), and two recordings of one program then order
their sets and dicts of strings differently, which shows as divergence in their steps. A run
whose seed was Python's own random secret says none. Everything here is read from the run rows already loaded: no step, frame
or blob is read, so a diff of long runs pays nothing for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from snapstate_capture import Run


@dataclass(frozen=True)
class FactChange:
    """One fact of how a run was started that differs: ``name`` (``argv``, ``python``, …) and
    its value in run A and in run B (None where a run does not say)."""

    name: str
    a: Any
    b: Any

    def to_json(self) -> dict[str, Any]:
        return {"fact": self.name, "a": self.a, "b": self.b}


def _facts(run: Run) -> dict[str, Any]:
    entry = run.entry if isinstance(run.entry, dict) else {}
    env = run.env if isinstance(run.env, dict) else {}
    record = entry.get("record") if isinstance(entry.get("record"), dict) else {}
    python = " ".join(str(env[k]) for k in ("implementation", "python") if env.get(k))
    return {
        "program": entry.get("path") or entry.get("module") or entry.get("kind"),
        "argv": entry.get("argv"),
        "cwd": entry.get("cwd") or env.get("cwd"),
        "python": python or None,
        "hash seed": entry.get("hash_seed"),
        "traced": {k: record[k] for k in ("trace", "include", "exclude") if record.get(k)}
                  or None,
        "packages": env.get("packages"),
    }


def fact_changes(a: Run, b: Run) -> list[FactChange]:
    """The facts of how runs ``a`` and ``b`` were started that differ, in a fixed order; an
    empty list when they were started alike. Package versions are listed one package a line
    (``packages: numpy``)."""
    first, second = _facts(a), _facts(b)
    changes = []
    for name, value in first.items():
        other = second[name]
        if name == "packages":
            mine = value if isinstance(value, dict) else {}
            theirs = other if isinstance(other, dict) else {}
            changes += [FactChange(f"package {package}", mine.get(package), theirs.get(package))
                        for package in sorted(set(mine) | set(theirs), key=str)
                        if mine.get(package) != theirs.get(package)]
        elif value != other:
            changes.append(FactChange(name, value, other))
    return changes
