"""A durable agent that runs offline: it drafts a content calendar, waits for two approvals
from two different reviewers, hits a rate limit while scheduling the posts, and finishes.

Every wait ends the process (exit 75) and is continued later from the command line, in any
process: ``snapstate resume FILE --answer-json ...`` for an approval, ``snapstate worker
FILE`` once the rate limit has reset (README, "Durable agents walkthrough").

    python -m examples.approval_agent [--out FILE] [--weeks N]

The "model" is a rule-based planner, the scheduler a local simulation that refuses its first
request with a ``retry_after`` (``APPROVAL_RATE_LIMIT_SECONDS``, default 45 s — longer than a
process holds a sleep, so the run ends ``sleeping``) and accepts the next once it has passed.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass

import snapstate_capture as snap

TOPICS = ("green roofs", "rain gardens", "street trees", "cool pavements", "urban ponds",
          "shade sails")
CHANNELS = ("blog", "newsletter", "social")
#: What an approval answer looks like (checked before the agent sees it).
APPROVAL = {"type": "object", "required": ["approved"], "additionalProperties": False,
            "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"},
                           "drop": {"type": "array", "items": {"type": "integer"}}}}


@dataclass
class Post:
    """One planned post: its week, channel, topic and title."""

    week: int
    channel: str
    topic: str
    title: str


class RateLimited(Exception):
    """The scheduler's answer to too many requests: try again after ``retry_after`` s."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"429 Too Many Requests (retry after {self.retry_after:g} s)"


@snap.effect(name="model")
def draft_calendar(brief: str, weeks: int) -> list[dict]:
    """The "model": a rule-based planner, one post per channel per week."""
    posts = []
    for week in range(1, weeks + 1):
        for offset, channel in enumerate(CHANNELS):
            topic = TOPICS[(week + offset) % len(TOPICS)]
            posts.append({"week": week, "channel": channel, "topic": topic,
                          "title": f"{topic.title()}: {brief.split()[0].lower()} week {week}"})
    return posts


@snap.effect(name="scheduler", retry=snap.Retry(on=(RateLimited,), backoff=1, max_attempts=4))
def schedule(posts: list[dict], quota_file: str) -> dict:
    """The scheduling API (simulated): the first request sets a rate-limit window and is
    refused; a request after the window is accepted."""
    wait = float(os.environ.get("APPROVAL_RATE_LIMIT_SECONDS", "45"))
    now = time.time()
    try:
        with open(quota_file, encoding="utf-8") as handle:
            reset = float(handle.read())
    except (OSError, ValueError):
        with open(quota_file, "w", encoding="utf-8") as handle:
            handle.write(str(now + wait))
        raise RateLimited(wait) from None
    if now < reset:
        raise RateLimited(round(reset - now, 1))
    return {"scheduled": len(posts), "first": posts[0]["title"] if posts else None}


def run_agent(brief: str, weeks: int, quota_file: str) -> dict:
    """Plan, get the editor's and legal's approvals, schedule; return the outcome."""
    calendar = [Post(**p) for p in draft_calendar(brief, weeks)]
    snap.checkpoint("drafted", posts=len(calendar))
    editor = snap.wait_for("editor", prompt=f"Approve {len(calendar)} posts for {weeks} weeks? "
                           '{"approved": true|false, "note": "...", "drop": [post numbers]}',
                           schema=APPROVAL)
    if not editor["approved"]:
        return {"status": "rejected by the editor", "note": editor.get("note", "")}
    dropped = set(editor.get("drop", []))
    calendar = [post for number, post in enumerate(calendar, 1) if number not in dropped]
    snap.checkpoint("edited", posts=len(calendar), note=editor.get("note", ""))
    legal = snap.wait_for("legal", prompt=f"Legal review of {len(calendar)} posts: "
                          '{"approved": true|false, "note": "..."}', schema=APPROVAL)
    if not legal["approved"]:
        return {"status": "stopped by legal", "note": legal.get("note", "")}
    receipt = schedule([asdict(post) for post in calendar], quota_file)
    return {"status": "scheduled", **receipt, "notes": [editor.get("note", ""),
                                                         legal.get("note", "")]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="calendar.snap", help="timeline file")
    parser.add_argument("--weeks", type=int, default=2)
    parser.add_argument("--brief", default="Climate adaptation for city residents")
    args = parser.parse_args(argv)
    quota = os.path.abspath(args.out) + ".quota"
    with snap.record(args.out, name="content-calendar"):
        outcome = run_agent(args.brief, args.weeks, quota)
    print(json.dumps(outcome, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
