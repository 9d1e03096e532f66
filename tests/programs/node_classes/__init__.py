"""A package whose submodule makes its classes with a metaclass while it is imported
(jinja2.nodes' ``NodeType``): see ``nodes.py`` and ``node_tree.py``."""

from . import nodes  # noqa: F401 - until this import ends, the package has no ``nodes``
