"""Deep-copy a tree whose nodes copy themselves (lark's ``Tree.__deepcopy__``).

    python deep_copy_tree.py

Prints a copied leaf. Under ``snapstate record --trace calls`` each traced ``__deepcopy__``
holds ``copy.deepcopy``'s memo: ``{id(original): copy, ..., id(memo): [originals]}`` — ids
of parts of the memo, of locals, and of the memo itself.
"""
import copy


class Leaf(str):
    """A text with a kind (lark's Token: a str subclass)."""

    def __new__(cls, kind, value):
        inst = super().__new__(cls, value)
        inst.kind = kind
        return inst

    def __deepcopy__(self, memo):
        return Leaf(self.kind, str(self))


class Tree:
    """A node with children."""

    def __init__(self, data, children):
        self.data = data
        self.children = children

    def __deepcopy__(self, memo):
        return type(self)(self.data, copy.deepcopy(self.children, memo))


def main():
    tree = Tree("sum", [Tree("num", [Leaf("N", "1")]),
                        Tree("mul", [Leaf("N", "2"), Tree("num", [Leaf("N", "3")])])])
    again = copy.deepcopy(tree)
    print(again.children[1].children[1].children[0], again is not tree)


if __name__ == "__main__":
    main()
