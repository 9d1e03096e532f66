"""The SQLite engine: a timeline *file* (``store.engine``'s contract, the embedded default).

One module per concern holds its SQL: ``runs``, ``steps``, ``blobs``, ``chunks``, ``effects``;
``connection`` opens files (creation, format version, WAL), ``schema`` is the file format,
``reading`` composes the read engine. Nothing outside this package writes SQL.
"""
