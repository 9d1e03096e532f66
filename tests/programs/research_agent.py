"""A small research agent for run-diff tests: ``python research_agent.py OUT.snap WORLD``.

The agent's code and plan are the same in every run; only the outside world (WORLD: which
answers its "tools" return, as an API would) differs. World ``a`` is the baseline. In world
``b`` the ``read`` tool returns a different page, so the first divergent state is the
``observe`` checkpoint of task ``read`` (variable ``result``), and the summarizer then fails
once, so run B has two extra steps (a ``retry`` checkpoint and a second ``observe``).
In world ``short`` the agent stops after the first task (run B ends early).
"""

from __future__ import annotations

import sys

import snapstate_capture as snap

WORLDS = {
    "a": {"search": "3 results", "read": "page v1: the answer is 42",
          "summarize": ["summary: 42"], "answer": "42"},
    "b": {"search": "3 results", "read": "page v2: the answer is 43",
          "summarize": ["error: rate limited", "summary: 43"], "answer": "43"},
    "short": {"search": "no results"},
}


def tool(name: str, attempt: int) -> str:
    """The outside world: what the tool returns in this run's world."""
    answer = WORLDS[sys.argv[2]][name]
    return answer[min(attempt, len(answer) - 1)] if isinstance(answer, list) else answer


def run_agent() -> dict:
    plan = [{"id": i, "task": task, "status": "todo"}
            for i, task in enumerate(["search", "read", "summarize", "answer"])]
    notes: dict[str, str] = {}
    snap.checkpoint("start")
    for item in plan:
        attempt = 0
        result = tool(item["task"], attempt)
        snap.checkpoint("observe")
        while result.startswith("error"):
            attempt += 1
            snap.checkpoint("retry")
            result = tool(item["task"], attempt)
            snap.checkpoint("observe")
        if result == "no results":
            break
        item["status"] = "done"
        notes[item["task"]] = result
        snap.checkpoint("done")
    return notes


if __name__ == "__main__":
    with snap.record(sys.argv[1], name=f"world-{sys.argv[2]}"):
        run_agent()
