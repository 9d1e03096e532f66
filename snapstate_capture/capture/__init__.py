"""Capture: runs and steps — ``record``, ``checkpoint``, ``@step``, effects, stack capture, the
value cache, RNG states and environment facts (docs/architecture.md)."""
