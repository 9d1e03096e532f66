"""The research agent with one planted bug, for the README walkthrough ("Find the planted bug").

It runs ``research_agent.py`` unchanged except for one helper, replaced below by a version with a
quiet bug: early in the run it corrupts the agent's state without any error, and the run fails
near its end, about a hundred steps later. Try to find the cause with the inspector before
reading the replacement below.

    python -m examples.buggy_agent [--out FILE]
"""

from __future__ import annotations

import sys

import snapstate_capture as snap

from . import research_agent


@snap.step
def describe_source(source: research_agent.Source) -> str:
    """A readable description of ``source`` for the progress log: ``urban heat (2020)``."""
    fields = vars(source)  # the planted bug: vars() is the object's own __dict__, not a copy
    fields["doc_id"] = fields["doc_id"].replace("_", " ")
    return "{doc_id} ({year})".format(**fields)


def main(argv: list[str] | None = None) -> None:
    original = research_agent.describe_source
    research_agent.describe_source = describe_source
    try:
        defaults = ["--out", "buggy_agent.snap", "--name", "buggy-agent"]
        research_agent.main(defaults + (sys.argv[1:] if argv is None else argv))
    finally:
        research_agent.describe_source = original


if __name__ == "__main__":
    main()
