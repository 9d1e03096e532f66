"""The runs of the file as a tree: forks under their parents; Enter switches to a run."""

from __future__ import annotations

import datetime as dt

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, Tree
from textual.widgets.tree import TreeNode

from snapstate_capture import Run

from ..model.runs import RunNode, run_tree
from ..model.waits import pause_text
from ..safe_text import plain
from ..widgets.status import STATUS_STYLE


def run_label(run: Run, current: bool) -> Text:
    """``● name 1a2b3c4d finished 120 steps 12:00:01 (fork of 9f8e7d6c@41)``; a waiting or
    sleeping run also says what it waits for (``⏸ waits for 'approval': …``)."""
    text = Text("● " if current else "  ", style="bold")
    text.append_text(plain(run.name, "bold"))
    text.append(f" {run.id[:8]} ", style="dim")
    text.append_text(plain(run.status, STATUS_STYLE.get(run.status, "")))
    text.append(f"  {run.step_count} steps  ")
    text.append(dt.datetime.fromtimestamp(run.started).strftime("%Y-%m-%d %H:%M:%S"), style="dim")
    if run.parent is not None:
        if run.continues:  # a resume made it
            text.append(f"  continues {run.parent.run_id[:8]} after step {run.parent.step}",
                        style="cyan")
        else:
            text.append(f"  fork of {run.parent.run_id[:8]} at step {run.parent.step}",
                        style="cyan")
    if run.pause is not None:  # a durable wait: what it waits for, or that it was continued
        mark = "  ✓ " if run.continued_as else "  ⏸ "
        text.append_text(plain(mark + pause_text(run), "dim" if run.continued_as
                               else "bold magenta" if run.status == "waiting" else "bold blue"))
    return text


class RunsScreen(ModalScreen[str | None]):
    """Dismisses with the chosen run's id, or None (q)."""

    BINDINGS = [Binding("q,r", "cancel", "Close", show=True)]

    def compose(self) -> ComposeResult:
        with Vertical(id="runs-box", classes="dialog"):
            yield Label("Runs in this file (Enter: show this run; q: close; "
                        "a on a waiting run: answer it)")
            yield Tree("runs", id="runs-tree")

    def on_mount(self) -> None:
        tree: Tree[str] = self.query_one("#runs-tree", Tree)
        tree.show_root = False
        current = self.app.current_run.id if self.app.current_run is not None else None
        cursor = None

        def add(parent: TreeNode[str], node: RunNode) -> None:
            nonlocal cursor
            label = run_label(node.run, node.run.id == current)
            item = (parent.add(label, node.run.id, expand=True) if node.children
                    else parent.add_leaf(label, node.run.id))
            if node.run.id == current:
                cursor = item
            for child in node.children:
                add(item, child)

        for root in run_tree(self.app.runs):
            add(tree.root, root)
        tree.focus()
        if cursor is not None:
            tree.move_cursor(cursor)

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        event.stop()
        if event.node.data:
            self.dismiss(event.node.data)

    def action_cancel(self) -> None:
        self.dismiss(None)
