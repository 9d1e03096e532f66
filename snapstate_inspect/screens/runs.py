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

    BINDINGS = [Binding("q,r", "cancel", "Close", show=True),
                Binding("a", "answer", "Answer this wait", show=True)]

    def compose(self) -> ComposeResult:
        with Vertical(id="runs-box", classes="dialog"):
            yield Label("Runs in this file (Enter: show this run; q: close; "
                        "a on a waiting run: answer it)")
            yield Tree("runs", id="runs-tree")

    def on_mount(self) -> None:
        tree: Tree[str] = self.query_one("#runs-tree", Tree)
        tree.show_root = False
        current = self.app.current_run.id if self.app.current_run is not None else None
        added = 0
        cursor_line: int | None = None

        def add(parent: TreeNode[str], node: RunNode) -> None:
            # Every node is expanded, so a node's line is its place in this depth-first walk.
            nonlocal added, cursor_line
            label = run_label(node.run, node.run.id == current)
            if node.run.id == current:
                cursor_line = added
            added += 1
            item = (parent.add(label, node.run.id, expand=True) if node.children
                    else parent.add_leaf(label, node.run.id))
            for child in node.children:
                add(item, child)

        for root in run_tree(self.app.runs):
            add(tree.root, root)
        tree.focus()
        if cursor_line is not None:  # the current run highlighted (``a`` acts on it)
            tree.cursor_line = cursor_line

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        event.stop()
        if event.node.data:
            self.dismiss(event.node.data)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_answer(self) -> None:
        """``a``: show the highlighted run and answer its wait (``answer.answer_wait``, which
        says so when the run does not wait)."""
        from .answer import answer_wait

        node = self.query_one("#runs-tree", Tree).cursor_node
        if node is None or not node.data:
            return
        app = self.app
        self.dismiss(node.data)  # the inspector shows that run
        app.call_after_refresh(answer_wait, app)
