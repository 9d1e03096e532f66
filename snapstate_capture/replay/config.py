"""What ``snapstate replay`` tells the replay child: one JSON file, written by the parent."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

#: What happens at step ``to``: only stop (``check``), pdb, a console, an IDE's debugger
#: (``debugpy``: waits for a DAP client on ``listen``), continue as a fork (``live``), or hand
#: a wait its outcome and continue as the run's continuation (``resume``).
MODES = ("check", "pdb", "console", "live", "debugpy", "resume")


@dataclass
class ReplayConfig:
    """Settings of one replay.

    ``file``: the timeline (absolute path); ``run``: the full run id; ``to``: the step to stop
    at (None: replay to the end); ``mode``: one of ``MODES``; ``live_effects``: effect names
    that run for real instead of being served; ``trust``: payloads may be loaded (required
    to serve effects); ``result``: where the child writes its result JSON; ``progress``:
    print progress on stderr during long replays; ``listen``: ``HOST:PORT`` debugpy listens on
    in ``debugpy`` mode; ``progress_file``: where the child keeps the index of the step it
    replayed last (the parent draws the bar), instead of printing progress itself.
    ``resume``: for mode ``resume``, what the wait at step ``to`` gets — ``{"answer": base64
    pickle | None, "by": who}``; ``lease``: ``{"run", "token", "ttl"}`` of the lease this replay
    holds (renewed by the child, claimed when the continuation is created, released at its
    end); ``name``: the continuation's name; ``remap_lines``: the code changed inside
    ``patched`` blocks, compare recorded lines where they are now (``linemap.py``);
    ``pythonpath``: the ``PYTHONPATH`` the program is to see (None: unset) — the child's own
    starts with this snapstate's folder, which the recording never had (``restore_pythonpath``).
    """

    file: str
    run: str
    result: str
    to: int | None = None
    mode: str = "check"
    live_effects: list[str] = field(default_factory=list)
    trust: bool = False
    progress: bool = True
    listen: str = "127.0.0.1:5678"
    progress_file: str | None = None
    resume: dict | None = None
    lease: dict | None = None
    name: str | None = None
    remap_lines: bool = False
    pythonpath: str | None = None

    def dump(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(asdict(self), handle)

    @classmethod
    def load(cls, path: str) -> ReplayConfig:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return cls(**data)

    def restore_pythonpath(self) -> None:
        """Give the program the ``PYTHONPATH`` it was recorded with in ``os.environ`` (this
        process's imports already follow the one it was started with): rich's ``Console``
        keeps ``os.environ``, and a traced replay diverged on the entry the parent added."""
        if self.pythonpath is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = self.pythonpath
