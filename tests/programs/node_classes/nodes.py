"""Node classes made by a metaclass, as jinja2.nodes makes them: ``NodeType.__new__`` runs
(and returns the new class, not yet bound in this module) while ``node_classes.nodes`` is being
imported, when its package has no attribute ``nodes`` yet. Each class's bases are bound here
already; a capture that cannot find them by reference writes them by value, every base up to
``Node`` with all their methods, at every class.
"""


class NodeType(type):
    """Gathers ``fields`` from the base class (jinja2.nodes' metaclass)."""

    def __new__(mcs, name, bases, d):
        storage = list(getattr(bases[0] if bases else object, "fields", ()))
        storage.extend(d.get("fields", ()))
        d["fields"] = tuple(storage)
        d.setdefault("abstract", False)
        return type.__new__(mcs, name, bases, d)


class Node(metaclass=NodeType):
    """A node: its fields given positionally."""

    fields = ()

    def __init__(self, *values):
        for name, value in zip(self.fields, values):
            setattr(self, name, value)

    def iter_fields(self):
        """``(name, value)`` of each field set."""
        for name in self.fields:
            if name in self.__dict__:
                yield name, self.__dict__[name]

    def find_all(self, node_type):
        """Every node of ``node_type`` beneath this one."""
        for _, value in self.iter_fields():
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, Node):
                    if isinstance(child, node_type):
                        yield child
                    yield from child.find_all(node_type)

    def __repr__(self):
        inner = ", ".join(f"{name}={value!r}" for name, value in self.iter_fields())
        return f"{type(self).__name__}({inner})"


class Kind0(Node):
    """Node kind 0."""

    fields = ("part0",)

    def describe(self):
        """The kind and its last field."""
        return "kind0", getattr(self, "part0", None)


class Kind1(Kind0):
    """Node kind 1."""

    fields = ("part1",)

    def describe(self):
        """The kind and its last field."""
        return "kind1", getattr(self, "part1", None)


class Kind2(Kind1):
    """Node kind 2."""

    fields = ("part2",)

    def describe(self):
        """The kind and its last field."""
        return "kind2", getattr(self, "part2", None)


class Kind3(Kind2):
    """Node kind 3."""

    fields = ("part3",)

    def describe(self):
        """The kind and its last field."""
        return "kind3", getattr(self, "part3", None)


class Kind4(Kind3):
    """Node kind 4."""

    fields = ("part4",)

    def describe(self):
        """The kind and its last field."""
        return "kind4", getattr(self, "part4", None)


class Kind5(Kind4):
    """Node kind 5."""

    fields = ("part5",)

    def describe(self):
        """The kind and its last field."""
        return "kind5", getattr(self, "part5", None)


class Kind6(Kind5):
    """Node kind 6."""

    fields = ("part6",)

    def describe(self):
        """The kind and its last field."""
        return "kind6", getattr(self, "part6", None)


class Kind7(Kind6):
    """Node kind 7."""

    fields = ("part7",)

    def describe(self):
        """The kind and its last field."""
        return "kind7", getattr(self, "part7", None)


class Kind8(Kind7):
    """Node kind 8."""

    fields = ("part8",)

    def describe(self):
        """The kind and its last field."""
        return "kind8", getattr(self, "part8", None)


class Kind9(Kind8):
    """Node kind 9."""

    fields = ("part9",)

    def describe(self):
        """The kind and its last field."""
        return "kind9", getattr(self, "part9", None)


class Kind10(Kind9):
    """Node kind 10."""

    fields = ("part10",)

    def describe(self):
        """The kind and its last field."""
        return "kind10", getattr(self, "part10", None)


class Kind11(Kind10):
    """Node kind 11."""

    fields = ("part11",)

    def describe(self):
        """The kind and its last field."""
        return "kind11", getattr(self, "part11", None)


class Kind12(Kind11):
    """Node kind 12."""

    fields = ("part12",)

    def describe(self):
        """The kind and its last field."""
        return "kind12", getattr(self, "part12", None)


class Kind13(Kind12):
    """Node kind 13."""

    fields = ("part13",)

    def describe(self):
        """The kind and its last field."""
        return "kind13", getattr(self, "part13", None)


class Kind14(Kind13):
    """Node kind 14."""

    fields = ("part14",)

    def describe(self):
        """The kind and its last field."""
        return "kind14", getattr(self, "part14", None)


class Kind15(Kind14):
    """Node kind 15."""

    fields = ("part15",)

    def describe(self):
        """The kind and its last field."""
        return "kind15", getattr(self, "part15", None)


class Kind16(Kind15):
    """Node kind 16."""

    fields = ("part16",)

    def describe(self):
        """The kind and its last field."""
        return "kind16", getattr(self, "part16", None)


class Kind17(Kind16):
    """Node kind 17."""

    fields = ("part17",)

    def describe(self):
        """The kind and its last field."""
        return "kind17", getattr(self, "part17", None)


class Kind18(Kind17):
    """Node kind 18."""

    fields = ("part18",)

    def describe(self):
        """The kind and its last field."""
        return "kind18", getattr(self, "part18", None)


class Kind19(Kind18):
    """Node kind 19."""

    fields = ("part19",)

    def describe(self):
        """The kind and its last field."""
        return "kind19", getattr(self, "part19", None)


class Kind20(Kind19):
    """Node kind 20."""

    fields = ("part20",)

    def describe(self):
        """The kind and its last field."""
        return "kind20", getattr(self, "part20", None)


class Kind21(Kind20):
    """Node kind 21."""

    fields = ("part21",)

    def describe(self):
        """The kind and its last field."""
        return "kind21", getattr(self, "part21", None)


class Kind22(Kind21):
    """Node kind 22."""

    fields = ("part22",)

    def describe(self):
        """The kind and its last field."""
        return "kind22", getattr(self, "part22", None)


class Kind23(Kind22):
    """Node kind 23."""

    fields = ("part23",)

    def describe(self):
        """The kind and its last field."""
        return "kind23", getattr(self, "part23", None)


class Kind24(Kind23):
    """Node kind 24."""

    fields = ("part24",)

    def describe(self):
        """The kind and its last field."""
        return "kind24", getattr(self, "part24", None)


class Kind25(Kind24):
    """Node kind 25."""

    fields = ("part25",)

    def describe(self):
        """The kind and its last field."""
        return "kind25", getattr(self, "part25", None)


class Kind26(Kind25):
    """Node kind 26."""

    fields = ("part26",)

    def describe(self):
        """The kind and its last field."""
        return "kind26", getattr(self, "part26", None)


class Kind27(Kind26):
    """Node kind 27."""

    fields = ("part27",)

    def describe(self):
        """The kind and its last field."""
        return "kind27", getattr(self, "part27", None)


class Kind28(Kind27):
    """Node kind 28."""

    fields = ("part28",)

    def describe(self):
        """The kind and its last field."""
        return "kind28", getattr(self, "part28", None)


class Kind29(Kind28):
    """Node kind 29."""

    fields = ("part29",)

    def describe(self):
        """The kind and its last field."""
        return "kind29", getattr(self, "part29", None)
