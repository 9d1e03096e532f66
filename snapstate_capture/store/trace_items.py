"""The item forms of the traced-step stream, shared by its producer and its storage.

The tracer (``tracing.stream``) appends these items; the trace writer stores them in chunks
(``store.chunks``), which decodes them again. The forms are described in ``tracing.stream``.
They are part of the file format: trace chunks store the items as they are.
"""

#: A line step's key ``k``: frame ``k >> LINE_BITS`` at line ``k & LINE_MASK``.
LINE_BITS = 22
LINE_MASK = (1 << LINE_BITS) - 1

# Item codes (first element of a control tuple).
OPEN, RETURN, EXCEPTION, BLOB, FULL, GAP, TASKS, TIME, ADOPT = -1, -2, -3, -4, -5, -6, -7, -8, -9
VALUE = -10
REFRESH = -11
#: The value of a local that was deleted.
DELETED = ()
