"""Automatic capture: the ``sys.settrace`` tracer, its per-frame trace function, include rules,
and the traced-step stream with the writer process that stores it (docs/architecture.md)."""
