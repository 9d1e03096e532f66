"""A visitor whose ``self`` holds a big graph (as pyflakes' Checker holds a module's tree):
call tracing stores it bounded (tracing/bounded.py).

    python big_self.py N    # a tree of N nodes, visited depth first; BIG_SELF_BUMP=K in the
                            # environment: the visit after K visits counts twice
"""

import os
import sys


class Node:
    def __init__(self, number, parent):
        self.number = number
        self.parent = parent
        self.children = []


class Visitor:
    def __init__(self, size):
        self.root = Node(0, None)
        self.nodes = [self.root]
        for number in range(1, size):
            parent = self.nodes[(number - 1) // 3]
            child = Node(number, parent)
            parent.children.append(child)
            self.nodes.append(child)
        self.visited = 0
        self.secret_token = "sk-" + "x" * 40

    def visit(self, node):
        self.visited += 2 if str(self.visited) == os.environ.get("BIG_SELF_BUMP") else 1
        for child in node.children:
            self.visit(child)
        return self.visited


if __name__ == "__main__":
    print(Visitor(int(sys.argv[1])).visit(Visitor(int(sys.argv[1])).root))
