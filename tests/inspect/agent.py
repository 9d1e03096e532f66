"""A small agent-like program recorded in-process for the inspector's tests.

``record_agent(path)`` records one run: nested calls (``run_agent`` → ``plan`` → ``call_tool``
via ``@snap.step``), dicts and lists that grow, a loop of checkpoints, a secret that is redacted,
a value holding Rich markup and terminal control characters, an unpicklable value (placeholder)
and an exception that is caught and one that ends the run. Returns the path.
"""

from __future__ import annotations

import threading

import snapstate_capture as snap


class ToolError(RuntimeError):
    pass


@snap.step
def call_tool(tool: str, query: str) -> dict:
    result = {"tool": tool, "query": query, "hits": len(query)}
    snap.checkpoint("tool result", result=result)
    if tool == "flaky":
        raise ToolError(f"{tool} timed out")
    return result


@snap.step
def plan(goal: str, attempt: int) -> list:
    steps = [f"{goal}: part {n}" for n in range(attempt + 1)]
    snap.checkpoint("planned")
    return steps


def run_agent(rounds: int = 4, with_lock: bool = True) -> dict:
    memory: list = []
    state = {"goal": "answer", "round": 0, "api_key": "sk-not-for-your-eyes"}
    banner = "[bold red]not markup[/] \x1b[31mred?\x1b[0m"
    lock = threading.Lock() if with_lock else None  # no pickle: stored as a placeholder
    for round_no in range(rounds):
        state["round"] = round_no
        steps = plan(state["goal"], round_no % 2)
        tool = "flaky" if round_no == 2 else "search"
        try:
            reply = call_tool(tool, steps[0])
        except ToolError as exc:
            reply = {"error": str(exc)}
        memory.append(reply)
        snap.checkpoint("round done", round_no=round_no)
    assert banner and (lock or not with_lock)
    return state


def record_agent(path, *, fail: bool = True):
    """Record the agent into ``path`` (a ``.snap``); the run ends failed when ``fail``."""
    try:
        with snap.record(path, name="agent"):
            state = run_agent()
            if fail:
                raise ValueError(f"gave up after round {state['round']}")
    except ValueError:
        pass
    return path


def record_fixed(path):
    """Record the agent with a fixed clock and run id, and no object addresses, so the file
    shows the same on every machine (for snapshot tests)."""
    import itertools
    import time
    import uuid
    from unittest import mock

    from snapstate_capture.clocks import Clocks

    ticks = itertools.count()

    def clock() -> float:
        return 1_700_000_000.0 + next(ticks) * 0.25

    with mock.patch.object(time, "time", clock), \
            mock.patch.object(Clocks, "time", clock), \
            mock.patch.object(uuid, "uuid4", lambda: uuid.UUID(int=0x5EED)):
        try:
            with snap.record(path, name="agent"):
                state = run_agent(with_lock=False)
                raise ValueError(f"gave up after round {state['round']}")
        except ValueError:
            pass
    return path


if __name__ == "__main__":
    import sys

    print(record_agent(sys.argv[1]))
