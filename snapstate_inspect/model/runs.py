"""Runs of a file as a tree (forks under their parents) and moving between them (UI-free)."""

from __future__ import annotations

from dataclasses import dataclass, field

from snapstate_capture import Run


@dataclass
class RunNode:
    """One run and the forks made from it (``children``, in file order)."""

    run: Run
    children: list[RunNode] = field(default_factory=list)


def run_tree(runs: list[Run]) -> list[RunNode]:
    """The runs as a forest: a run whose parent is in the file sits under it; others are roots.

    A parent link that points at itself or forms a cycle is treated as absent.
    """
    nodes = {run.id: RunNode(run) for run in runs}
    roots: list[RunNode] = []
    for run in runs:
        parent_id = run.parent.run_id if run.parent else None
        if parent_id in nodes and parent_id != run.id and not _cycle(nodes, run.id, parent_id):
            nodes[parent_id].children.append(nodes[run.id])
        else:
            roots.append(nodes[run.id])
    return roots


def _cycle(nodes: dict[str, RunNode], run_id: str, parent_id: str) -> bool:
    seen = {run_id}
    current: str | None = parent_id
    while current is not None and current in nodes:
        if current in seen:
            return True
        seen.add(current)
        parent = nodes[current].run.parent
        current = parent.run_id if parent else None
    return False


def step_in_other_run(source: Run, target: Run, step: int, target_count: int) -> int:
    """Where to stand in ``target`` when leaving ``source`` at ``step``.

    A fork shares its parent's steps up to the fork point, so between a run and its fork (either
    way) the same index is kept while it lies in the shared part; past the fork point in the
    parent, the fork's first own step is used. Unrelated runs keep the index, clamped to the
    target's steps. Returns -1 for a target without steps.
    """
    if target_count <= 0:
        return -1
    if target.parent is not None and target.parent.run_id == source.id:
        step = min(step, target.parent.step)
    return min(max(step, 0), target_count - 1)
