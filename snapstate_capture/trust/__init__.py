"""Trust: the user's keys, run signatures, the trust gate before any payload is unpickled,
``verify``, and encryption at rest (docs/architecture.md)."""
