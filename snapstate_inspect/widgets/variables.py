"""The variables of the selected frame: a lazy tree of previews with change marks.

Each row: a change mark (``+`` added, ``~`` changed, ``-`` removed since the previous step, in
colour *and* shape), the name, the short type and the preview's repr, all plain text. Containers
expand on demand, ``PAGE`` children at a time; placeholders and redactions carry a visible tag.
Previews are loaded by the screen (in a worker) and handed over with ``show``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ..model.values import (ADDED, CHANGED, PAGE, REMOVED, VariableKey, child_changes,
                            child_page, is_container)
from ..safe_text import plain

MARKS = {ADDED: ("+", "green"), CHANGED: ("~", "yellow"), REMOVED: ("-", "red strike")}
LABEL_REPR = 160


def short_type(name: str) -> str:
    """``builtins.dict`` → ``dict``; ``pkg.mod.Class`` → ``Class``."""
    return name.removeprefix("builtins.").rsplit(".", 1)[-1]


def value_label(name: str, preview: dict[str, Any], mark: str | None = None) -> Text:
    """One tree row for a value: mark, name, type, repr (clipped) and tags."""
    symbol, colour = MARKS.get(mark or "", (" ", ""))
    text = Text(symbol + " ", style=colour)
    text.append_text(plain(name, "bold " + colour if mark == REMOVED else "bold"))
    text.append(" ")
    type_name = short_type(str(preview.get("type", "?")))
    size = preview.get("len")
    text.append_text(plain(type_name + (f"[{size}]" if isinstance(size, int) else ""), "cyan"))
    text.append(" = ", style="dim")
    repr_text = str(preview.get("repr", ""))
    if len(repr_text) > LABEL_REPR:
        repr_text = repr_text[:LABEL_REPR - 1] + "…"
    text.append_text(plain(repr_text))
    text.append_text(tags(preview))
    return text


def tags(preview: dict[str, Any]) -> Text:
    """The visible tags of a preview: redacted, placeholder, not loadable, unreadable."""
    out = Text()
    if preview.get("redacted"):
        out.append("  [redacted: secret name]", style="bold magenta")
    holder = preview.get("placeholder")
    if isinstance(holder, dict):
        out.append_text(plain(f"  [placeholder: {holder.get('reason', '?')}]", "bold yellow"))
    if preview.get("not_loadable"):
        out.append_text(plain(f"  [not loadable: {preview['not_loadable']}]", "yellow"))
    if preview.get("error"):
        out.append("  [unreadable]", style="bold red")
    return out


@dataclass
class Node:
    """What a tree node stands for: a value (``key`` + ``preview``), or a page of children."""

    key: VariableKey | None
    preview: dict[str, Any] = field(default_factory=dict)
    previous: dict[str, Any] | None = None
    offset: int = 0
    loaded: bool = False
    page_of: Any = None  # for "show more" rows: the parent Node


class VariablesView(Tree[Node]):
    """Locals of one frame (and the step's own values), lazily expanded."""

    DEFAULT_CSS = """
    VariablesView { background: $surface; }
    """

    class Selected(Message):
        """The highlighted variable (or a path inside one) is ``key`` with ``preview``."""

        def __init__(self, key: VariableKey | None, preview: dict[str, Any] | None) -> None:
            super().__init__()
            self.key = key
            self.preview = preview

    def refresh(self, *regions, repaint: bool = True, layout: bool = False,
                recompose: bool = False):
        """Repaint without a layout pass: this panel's size is fixed by the screen's CSS, and a
        layout pass redraws the whole screen (the most expensive part of a key press)."""
        return super().refresh(*regions, repaint=repaint, layout=False, recompose=recompose)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("locals", id=id)
        self.show_root = False
        self.guide_depth = 3

    def show_loading(self, title: str) -> None:
        self.clear()
        self.root.add_leaf(Text(title, style="dim italic"), Node(None))

    def show(self, position: int, function: str,
             rows: list[tuple[str, dict[str, Any], str, dict[str, Any] | None]],
             extra: list[tuple[str, dict[str, Any]]], select: str | None = None,
             announce: bool = True, select_step_value: str | None = None,
             empty: str | None = None) -> Node | None:
        """Show locals ``rows`` = ``(name, preview, mark, previous preview)`` and step values
        ``extra``; the cursor goes to the step value ``select_step_value`` when there is one
        (a search hit in it), else to the local ``select`` when it is there, else to the first
        row. ``empty``: what a frame without locals says (default "(no locals)"). Returns the
        ``Node`` under the cursor (None for an empty frame)."""
        self.clear()
        chosen: Node | None = None
        line = 0
        for index, (name, preview, mark, previous) in enumerate(rows):
            data = Node(VariableKey(position, function, name), preview, previous)
            self._add_value(self.root, name, preview, mark, data)
            if chosen is None or name == select:
                chosen, line = data, index
        if not rows:
            self.root.add_leaf(Text(empty or "(no locals)", style="dim italic"), Node(None))
        if extra:
            group = self.root.add(Text("step values", style="bold dim"), Node(None), expand=True)
            first = max(len(rows), 1) + 1  # the line under the group's (locals are collapsed)
            for index, (name, preview) in enumerate(extra):
                data = Node(None, preview)
                self._add_value(group, name, preview, None, data)
                if name == select_step_value:
                    chosen, line = data, first + index
        self.cursor_line = line
        if announce:
            self.announce()
        return chosen

    def announce(self) -> None:
        """Post ``Selected`` for the node under the cursor (after the tree was rebuilt)."""
        node = self.cursor_node
        data = node.data if node is not None else None
        if data is None:
            self.post_message(self.Selected(None, None))
        else:
            self.post_message(self.Selected(data.key, data.preview or None))

    def _add_value(self, parent: TreeNode[Node], name: str, preview: dict[str, Any],
                   mark: str | None, data: Node) -> TreeNode[Node]:
        label = value_label(name, preview, mark)
        if is_container(preview):
            return parent.add(label, data, expand=False, allow_expand=True)
        return parent.add_leaf(label, data)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Node]) -> None:
        event.stop()
        node = event.node
        data = node.data
        if data is None or data.loaded:
            return
        data.loaded = True
        self._add_page(node, data, 0)

    def _add_page(self, parent: TreeNode[Node], data: Node, offset: int) -> None:
        page, left = child_page(data.preview, offset)
        marks = child_changes(data.preview, data.previous)
        before = dict((data.previous or {}).get("children") or [])  # label -> preview
        for label, child in page:
            key = None
            if data.key is not None:
                key = VariableKey(data.key.position, data.key.function, data.key.name,
                                  (*data.key.path, label))
            previous = before.get(label) if isinstance(before.get(label), dict) else None
            self._add_value(parent, label, child, marks.get(label),
                            Node(key, child, previous))
        if left:
            parent.add_leaf(Text(f"… show {min(left, PAGE)} more ({left} left)",
                                 style="italic cyan"),
                            Node(None, offset=offset + PAGE, page_of=data))
        more = data.preview.get("more")
        if not left and isinstance(more, int) and more > 0:
            parent.add_leaf(Text(f"… {more} more not captured in the preview",
                                 style="dim italic"), Node(None))
        if not left and data.preview.get("truncated"):
            parent.add_leaf(Text("… deeper levels not captured (max depth)",
                                 style="dim italic"), Node(None))

    def on_tree_node_selected(self, event: Tree.NodeSelected[Node]) -> None:
        node = event.node
        data = node.data
        if data is not None and data.page_of is not None and node.parent is not None:
            event.stop()
            parent = node.parent
            node.remove()
            self._add_page(parent, data.page_of, data.offset)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Node]) -> None:
        event.stop()
        self.announce()
