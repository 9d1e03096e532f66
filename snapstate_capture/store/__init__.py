"""The timeline store: schema, blob encoding, the writer and the reader (docs/architecture.md).

Import the module you need (``store.reader``, ``store.writer``, …): this package loads nothing
itself, so a process that needs one part does not pay for the rest.
"""
