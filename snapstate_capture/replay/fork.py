"""Starting a fork: a new run in the same file whose first steps are its parent's.

The fork's steps ``0 … N`` are copies of the parent's steps (``store/step_copy.py``: step
rows refer to the same blobs, so they cost a row each; a traced parent's trace chunks are
copied whole, the one holding step N cut after it) and its journal holds the parent's effects
up to step N; from step N + 1 on the fork is recorded live. A fork is therefore a complete
run: it can be browsed, replayed and forked again on its own.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..capture.environment import OWN_PACKAGES, environment_facts
from ..store.leases import LeaseLost
from ..store.reader import Run
from ..store.step_copy import copy_steps
from ..store.writer import TimelineWriter

if TYPE_CHECKING:
    from .session import ReplaySession


def start_fork(writer: TimelineWriter, parent: Run, step: int, *, name: str | None = None,
               claim: tuple[str, str] | None = None) -> str:
    """Create a fork of ``parent`` at ``step`` through ``writer``; return the fork's run id.

    The fork keeps the parent's entry (how to start it again) and records this process's
    environment. ``claim`` (``(run id, lease token)``) makes it that run's continuation
    (``TimelineWriter.begin_run``; raises ``LeaseLost`` when the lease is gone). Raises
    ``sqlite3.Error``/``TimelineError`` if the file cannot be written.
    """
    run_id = writer.begin_run(name=name or f"{parent.name} fork@{step}", entry=parent.entry,
                              env=fork_environment(parent), parent=(parent.id, step),
                              claim=claim)
    copy_steps(parent, 0, step + 1, writer, run_id)
    rows = parent.timeline.engine.effect_rows(parent.id, max_step=step)
    for seq, at, site, task, ordinal, effect_name, args_hash, outcome, value in rows:
        writer.add_effect(run_id, {"seq": seq, "step": at, "site": site, "task": task,
                                   "ordinal": ordinal, "name": effect_name,
                                   "args_hash": args_hash, "outcome": outcome,
                                   "value": json.loads(value) if value else None}, {})
    return run_id


def fork_environment(parent: Run) -> dict[str, Any]:
    """This process's environment facts, its key packages those ``parent`` was started with
    (at this process's versions): the program imported others on its way to the fork point,
    as the parent's did after it started, and ``snapstate diff`` of a run and its fork
    listed ``package httpx: (none) → 0.29.0`` as an input the two differed in."""
    env = environment_facts()
    listed = parent.env.get("packages")
    if isinstance(listed, dict) and isinstance(env.get("packages"), dict):
        env["packages"] = {dist: version for dist, version in env["packages"].items()
                           if dist in listed or dist in OWN_PACKAGES}
    return env


def open_fork(session: ReplaySession, step: int, key: Any) -> tuple[TimelineWriter, str] | None:
    """Create the fork of the replayed run at ``step`` in the replayed file, signed with the
    user key ``key`` (None: unsigned); with the session's lease (a resume) the fork is the
    run's continuation, created only while the lease is still this process's.

    Returns the open writer and the fork's run id. On failure — the lease lost, the file not
    writable — the replay fails with the reason (``session.fail``, exit 2), the writer is
    closed and None is returned.
    """
    from ..trust.signing import RunSigner

    lease = session.config.lease
    claim = (lease["run"], lease["token"]) if lease else None
    writer = None
    try:
        writer = TimelineWriter(session.config.file, signer=RunSigner(key))
        return writer, start_fork(writer, session.run, step, name=session.config.name,
                                  claim=claim)
    except Exception as exc:  # noqa: BLE001 - reported as the replay's error
        if writer is not None:
            writer.close()
        session.fail(str(exc) if isinstance(exc, LeaseLost)
                     else f"cannot start the fork: {type(exc).__name__}: {exc}")
        return None
