"""Represent nested data the way PyYAML's ``BaseRepresenter`` does: the representer keeps
``alias_key = id(data)`` of the last object it represented, ``data`` itself kept alive in its
``object_keeper`` list, and ``represented_objects`` keyed by those ids.

    python alias_keys.py

Prints the represented tree's size. Under ``snapstate record --trace calls`` the
representer holds more than 300 objects, so it is stored one level deep (bounded) at traced
steps, and ``alias_key`` is an int attribute there: the id of an item of ``object_keeper``.
"""


class Representer:
    """Turns data into nodes, sharing the node of an object met twice (PyYAML's aliases)."""

    def __init__(self):
        self.represented_objects = {}
        self.object_keeper = []
        self.alias_key = None
        self.resolvers = [(f"tag:{i}", [f"first{i}"]) for i in range(200)]  # a big object

    def represent(self, data):
        """The node of ``data``: a tuple of a kind and its children or text."""
        self.alias_key = None if isinstance(data, (str, int)) else id(data)
        if self.alias_key is not None:
            if self.alias_key in self.represented_objects:
                return self.represented_objects[self.alias_key]
            self.object_keeper.append(data)
        if isinstance(data, dict):
            node = ("map", [(self.represent(k), self.represent(v)) for k, v in data.items()])
        elif isinstance(data, list):
            node = ("seq", [self.represent(item) for item in data])
        else:
            node = ("str", str(data))
        if self.alias_key is not None:
            self.represented_objects[id(data)] = node
        return node


def size(node):
    """How many nodes ``node`` holds."""
    kind, body = node
    if kind == "str":
        return 1
    if kind == "seq":
        return 1 + sum(map(size, body))
    return 1 + sum(size(key) + size(value) for key, value in body)


def main():
    shared = ["".join(("tag", str(i))) for i in range(3)]
    data = {"rows": [{"name": f"row{i}", "values": list(range(i % 5)), "tags": shared}
                     for i in range(40)]}
    print(size(Representer().represent(data)))


if __name__ == "__main__":
    main()
