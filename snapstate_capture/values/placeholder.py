"""Placeholders: what stands in for an object that could not be serialized.

A ``Placeholder`` is importable and picklable, so a payload whose part failed still loads: the
failed part comes back as a Placeholder naming its type, repr, the reason and its path inside
the captured value (``session.reply``, ``tools[2].client``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placeholder:
    """Stand-in for an object that could not be captured.

    Fields: ``type_name`` (``module.qualname``), ``repr`` (bounded repr, or the repr's error),
    ``reason`` (why it could not be serialized, e.g. ``"TypeError: cannot pickle '_thread.lock'"``)
    and ``path`` (where it was inside the captured value; ``""`` for the value itself).
    """

    type_name: str
    repr: str
    reason: str
    path: str = ""

    def __repr__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"<placeholder {self.type_name}{where}: {self.reason}>"

    def to_json(self) -> dict[str, str]:
        """Return the JSON form kept in previews: ``{"type", "repr", "reason", "path"}``."""
        return {"type": self.type_name, "repr": self.repr, "reason": self.reason,
                "path": self.path}
