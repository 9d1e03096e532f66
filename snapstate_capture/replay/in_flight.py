"""Served effects in flight during a traced replay, for a stop or fork in another lineage.

In a concurrent run, a stop at step N in one task can come while other tasks are inside
effects that were called before step N and recorded as returning after it — or, as the
tasks interleave on replay, before it but not yet here. Replay serves those effects and never
runs their bodies, so the recorded steps of their bodies (and, for those recorded as returning
before the stop, their effect steps) are never made before the stop: ``InFlight`` says which
they are (``TracedComparison.check_reached`` counts them as served).

A fork at step N copies the parent's steps and journal up to N (``fork.py``): an effect in
flight there whose step is among them (``settle``) returns later with the served result but
writes no second step or journal row into the fork (``in_prefix``).
"""

from __future__ import annotations

import threading
from typing import Any


def _key(site: Any, task: Any, ordinal: Any) -> tuple[Any, Any, Any]:
    """A served call's journal key: its site, lineage and ordinal there."""
    return site, task, ordinal


class InFlight:
    """The served calls of a replay that have not returned yet, by lane (thread-safe). Keeps
    their keys and recorded steps only, never the calls (their frames stay the program's)."""

    def __init__(self) -> None:
        self._calls: dict[str, dict[tuple[Any, Any, Any], int]] = {}
        self._lock = threading.Lock()
        #: Calls in flight at the fork whose effect step the fork copied from its parent.
        self._prefix: set[tuple[Any, Any, Any]] = set()

    def add(self, call: Any) -> None:
        """``call`` (an ``EffectCall`` the journal served, with its ``recorded_step``) was
        made in its lineage (``call.lineage``: a framework's journal lane, ``call.task``, is
        no lineage steps are compared in) and has not returned yet."""
        with self._lock:
            self._calls.setdefault(call.lineage, {})[
                _key(call.site, call.task, call.ordinal)] = call.recorded_step

    def returned(self, call: Any) -> None:
        """``call`` returns now: no longer in flight."""
        with self._lock:
            self._calls.get(call.lineage, {}).pop(
                _key(call.site, call.task, call.ordinal), None)

    def steps(self) -> dict[str, list[int]]:
        """Lane -> the recorded effect steps of its calls in flight now (a copy)."""
        with self._lock:
            return {lane: list(calls.values()) for lane, calls in self._calls.items() if calls}

    def settle(self, index: int) -> None:
        """The replay forks at step ``index``: the calls in flight recorded at or before it
        are in the fork's copied steps and journal already (``in_prefix``)."""
        with self._lock:
            self._prefix = {key for calls in self._calls.values()
                            for key, step in calls.items() if step <= index}

    def in_prefix(self, row: dict[str, Any] | None) -> bool:
        """True (once) for the journal row of a call ``settle`` found in the fork's copied
        steps: its effect step is not written again."""
        if row is None or not self._prefix:
            return False
        key = _key(row.get("site"), row.get("task"), row.get("ordinal"))
        with self._lock:
            if key in self._prefix:
                self._prefix.discard(key)
                return True
        return False
