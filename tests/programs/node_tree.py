"""Build a few nodes of classes a metaclass made while their module was imported.

    python node_tree.py

Run from this folder (the ``node_classes`` package beside it). Under ``snapstate record
--trace calls --include '*/node_classes/*'`` every ``NodeType.__new__`` return is a class not
yet bound in its module, whose bases are: each is captured with its bases by reference.
"""

from node_classes import nodes


def main():
    leaf = nodes.Kind2(1, 2, 3)
    tree = nodes.Kind5(leaf, [nodes.Kind0("x"), leaf], "a", "b", "c", "d")
    print(len(list(tree.find_all(nodes.Kind2))), tree.describe(), len(nodes.Kind29.fields))


if __name__ == "__main__":
    main()
