"""Reading a run's effect journal: the rows of ``effects``, per task in call order."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ..store.reader import Run, Value


@dataclass(frozen=True)
class JournalEntry:
    """One recorded effect call (a row of the ``effects`` table).

    ``value`` is the value ref of the result (``outcome == "return"``) or the exception
    (``"raise"``); ``args_preview`` the preview hash of the arguments (for divergence reports).
    """

    seq: int
    step: int | None
    site: str
    task: str
    ordinal: int
    name: str
    args_hash: str | None
    outcome: str
    value: dict[str, Any]

    @property
    def args_preview(self) -> str | None:
        return self.value.get("a")

    @property
    def args_ref(self) -> dict[str, Any]:
        """The value ref of the recorded arguments' preview (sealed: ``"x"`` names the key)."""
        ref: dict[str, Any] = {"p": self.value.get("a")}
        if self.value.get("ax"):
            ref["x"] = self.value["ax"]
        return ref

    @property
    def args_sealed(self) -> bool:
        """Recorded encrypted: the argument digest is keyed (``encryption.keyed_digest``)."""
        return bool(self.value.get("ax"))


class Journal:
    """A run's effect journal, grouped by task (asyncio task or thread name), in call order."""

    def __init__(self, run: Run) -> None:
        self.run = run
        rows = run.timeline.engine.effect_rows(run.id)
        self.entries: list[JournalEntry] = []
        self.by_task: dict[str, list[JournalEntry]] = defaultdict(list)
        for seq, step, site, task, ordinal, name, args_hash, outcome, value in rows:
            try:
                ref = json.loads(value) if value else {}
            except json.JSONDecodeError:
                ref = {}
            entry = JournalEntry(seq, step, site, task or "", ordinal, name, args_hash, outcome,
                                 ref if isinstance(ref, dict) else {})
            self.entries.append(entry)
            self.by_task[entry.task].append(entry)
        self._cursor: dict[str, int] = defaultdict(int)

    def __len__(self) -> int:
        return len(self.entries)

    def next_for(self, task: str) -> JournalEntry | None:
        """The task's next recorded effect (advancing the task's cursor), or None at its end."""
        position = self._cursor[task]
        entries = self.by_task.get(task, [])
        if position >= len(entries):
            return None
        self._cursor[task] = position + 1
        return entries[position]

    def peek_for(self, task: str) -> JournalEntry | None:
        """The task's next recorded effect without advancing, or None at its end."""
        position = self._cursor[task]
        entries = self.by_task.get(task, [])
        return entries[position] if position < len(entries) else None

    def value(self, entry: JournalEntry) -> Value:
        """The recorded result or exception of ``entry`` as a reader ``Value``."""
        return Value(self.run.timeline, entry.name, entry.value)
