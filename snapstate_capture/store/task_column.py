"""The ``task`` of a step: the asyncio task's name and the step's lineage, in one text field.

A step's ``task`` column (and the ``task`` of a traced frame in a chunk) holds
``name + "\\x1f" + lineage``: the name of the asyncio task that made the step (empty outside
one) and its lineage (``capture/lineage.py``: ``main/t0``, ``main/p2``). Files recorded before
lineages hold the name alone. Readers split it (``split``): a step's ``.task`` is the name,
``.lineage`` the lineage — only replay compares lineages; names are for people.
"""

from __future__ import annotations

SEPARATOR = "\x1f"


def join(name: str | None, lineage: str | None) -> str | None:
    """The stored field for a task ``name`` (or None) and a ``lineage`` (or None)."""
    if not lineage:
        return name
    return f"{name or ''}{SEPARATOR}{lineage}"


def split(field: str | None) -> tuple[str | None, str | None]:
    """``(name or None, lineage or None)`` of a stored field (see ``join``)."""
    if not field or SEPARATOR not in field:
        return field or None, None
    name, _, lineage = field.rpartition(SEPARATOR)
    return name or None, lineage or None
