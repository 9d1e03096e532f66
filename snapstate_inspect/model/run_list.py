"""The run list of a store, filled lazily (UI-free): what the runs table shows.

A shared store may hold 100,000 runs; ``RunList`` never reads them all. It knows how many runs
match (one count), and reads rows a page at a time when asked for one (``row(i)``): the page
after a page it has is a keyset page (``seq < the last seq seen``); a page deep in the list
starts where ``Timeline.run_seq_at`` says, so scrolling to the end costs what the first page
does. Pages are kept in a small LRU cache.

The query is the filter box's text: words are searched in the name, id, host and user;
``status:S``, ``user:U`` and ``host:H`` pick exactly (``parse_query``). ``running`` and
``crashed`` pick both: a run whose recorder died is stored ``running`` and told apart by the
reader (by pid, on the recorder's own host), which a query cannot do.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from snapstate_capture import Run, SnapStateError, Timeline

#: Rows read per query.
PAGE = 100
#: Pages kept (older ones are read again when scrolled back to).
KEEP_PAGES = 32
#: Statuses the filter key cycles through (None: all). ``waiting``/``sleeping`` are durable
#: waits' (DESIGN.md "run").
STATUSES: tuple[str | None, ...] = (None, "running", "waiting", "sleeping", "finished",
                                    "failed", "crashed", "truncated")
_FIELDS = ("status", "user", "host")


def parse_query(text: str) -> dict[str, Any]:
    """The filter box's text as engine filters: ``status:failed user:ana deploy`` →
    ``{"status": "failed", "user": "ana", "text": "deploy"}`` (free words joined by spaces)."""
    where: dict[str, Any] = {}
    words = []
    for word in text.split():
        name, sep, value = word.partition(":")
        if sep and name.lower() in _FIELDS and value:
            where[name.lower()] = value
        else:
            words.append(word)
    if words:
        where["text"] = " ".join(words)
    return where


def format_duration(seconds: float | None) -> str:
    """``0.42s``, ``12.3s``, ``4m05s``, ``2h10m``, ``3d04h``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"
    return f"{int(seconds // 86400)}d{int(seconds % 86400 // 3600):02d}h"


@dataclass(frozen=True)
class RunRow:
    """One row of the runs table, as plain values (the run's text is the store's: escape it
    when drawing)."""

    run: Run
    name: str
    status: str
    user: str
    host: str
    started: float
    duration: str
    parent: str


def run_row(run: Run) -> RunRow:
    """The table row of ``run``; the duration of a run without an end is the time since its
    start for a live run, else unknown (no step is read: a page costs one query)."""
    if run.ended is not None:
        seconds: float | None = max(run.ended - run.started, 0.0)
    elif run.status == "running":
        seconds = max(time.time() - run.started, 0.0)
    else:
        seconds = None
    parent = f"{run.parent.run_id[:8]}@{run.parent.step}" if run.parent is not None else ""
    return RunRow(run, run.name, run.status, run.user or "", run.host or "", run.started,
                  format_duration(seconds), parent)


class RunList:
    """The runs of ``timeline`` matching ``query`` (the filter box's text), newest first.

    ``count`` is how many match; ``row(i)`` is the ``RunRow`` at position ``i`` (None past the
    end or when the store cannot be read: ``error`` then says why). Not thread-safe: the
    table reads it from the UI thread (each page is one indexed query).
    """

    def __init__(self, timeline: Timeline, query: str = "", *, status: str | None = None,
                 page: int = PAGE) -> None:
        self.timeline = timeline
        self.query = query
        self.where = parse_query(query)
        if status:
            self.where["status"] = status
        self.page = page
        self.error: str | None = None
        self._pages: OrderedDict[int, list[RunRow]] = OrderedDict()
        try:
            self.count = timeline.run_count(self.where)
        except SnapStateError as exc:
            self.count, self.error = 0, str(exc)
        self.queries = 1  # count and pages read so far (the bench and tests read it)

    def row(self, index: int) -> RunRow | None:
        """The row at ``index`` (0 = newest), reading its page when it is not cached."""
        if not 0 <= index < self.count:
            return None
        number = index // self.page
        rows = self._pages.get(number)
        if rows is None:
            rows = self._read(number)
        else:
            self._pages.move_to_end(number)
        offset = index - number * self.page
        return rows[offset] if offset < len(rows) else None

    def index_of(self, run_id: str) -> int | None:
        """The position of run ``run_id`` among the rows read so far, or None."""
        for number, rows in self._pages.items():
            for offset, row in enumerate(rows):
                if row.run.id == run_id:
                    return number * self.page + offset
        return None

    def _read(self, number: int) -> list[RunRow]:
        before: int | None = None
        if number > 0:
            previous = self._pages.get(number - 1)
            if previous and len(previous) == self.page:
                before = previous[-1].run.seq
        try:
            if number > 0 and before is None:
                before = self.timeline.run_seq_at(number * self.page - 1, self.where)
                self.queries += 1
                if before is None:
                    return []
            runs = self.timeline.run_page(before=before, limit=self.page, where=self.where)
            self.queries += 1
        except SnapStateError as exc:
            self.error = str(exc)
            return []
        rows = [run_row(run) for run in runs]
        self._pages[number] = rows
        if len(self._pages) > KEEP_PAGES:
            self._pages.popitem(last=False)
        return rows
