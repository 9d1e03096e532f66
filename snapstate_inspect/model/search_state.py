"""The state of the run's search while it goes on in the background (UI-free).

One search at a time: ``SearchState`` holds the query, the hits found so far (step order), the
progress and whether it finished or was stopped. The worker thread appends; the UI reads.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field


#: How a hit in one of a step's own values begins (``search._ValueMatcher.step_value_where``).
STEP_VALUE = "step value "


@dataclass
class SearchState:
    """``query``; ``hits`` (step indexes, ascending); ``where`` (step -> what matched);
    ``locals_at`` (step -> the frame and local a value hit is in);
    ``done``/``total`` steps scanned; ``finished``; ``stopped``."""

    query: str = ""
    hits: list[int] = field(default_factory=list)
    where: dict[int, str] = field(default_factory=dict)
    #: step -> (frame position, local name) of a hit in a local of a frame (``Hit.frame``)
    locals_at: dict[int, tuple[int, str]] = field(default_factory=dict)
    done: int = 0
    total: int = 0
    finished: bool = False
    stopped: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def running(self) -> bool:
        return bool(self.query) and not (self.finished or self.stopped)

    def step_value_at(self, step: int) -> str | None:
        """The name of the step value a hit at ``step`` is in (``where``: ``step value
        NAME[path]``), else None."""
        where = self.where.get(step, "")
        if not where.startswith(STEP_VALUE):
            return None
        return re.split(r"[\[.]", where[len(STEP_VALUE):], maxsplit=1)[0] or None

    def summary(self) -> str:
        """``'tool': 12 hits (40%)`` — for the status bar and the dialog."""
        if not self.query:
            return ""
        count = f"{len(self.hits):,} hit" + ("" if len(self.hits) == 1 else "s")
        if self.finished:
            return f"search {self.query!r}: {count}"
        if self.stopped:
            return f"search {self.query!r}: {count} (stopped at step {self.done:,})"
        share = 100 * self.done // self.total if self.total else 0
        return f"searching {self.query!r}: {count} so far ({share}% of {self.total:,} steps)"
