"""One capture of a value for both kinds of steps of a traced run.

In a traced run, an explicit step (``checkpoint``, an effect, a ``@step`` call) captures its
stack through the value cache (``valuecache.py``), while the tracer captures the same frames'
locals at call and return events (``tracing/stream.py``). The same object, unchanged, was
captured twice over: in ``pytest --snapstate`` on ``examples/tests``, 154 of the research
agent's 336 explicit-step captures had been made by the tracer already, and 31 of the tracer's
201 by an explicit step.

Both key a non-builtin value by the digest of its plain protocol-5 pickle, and both make its
preview and payload with ``values.capture_value``, so a capture one made can stand for the
other's when it depends on nothing but the value:

- no placeholder, redacted part or warning (they name the path the value was found under);
- no capture error;
- for the value cache, the loadability verdict it would have reached: traced captures skip
  that judgement (``test_load`` off), so a lent one is judged from its payload first
  (``loadability.judge``, opcodes only) and refused when the judge says "not loadable"
  (the value cache's capture would then take another path).

A lent capture's blobs must be in the file before the step that names them: a traced capture's
went to the writer when it was made; an explicit step's captures are offered (``offer``) only
once its step has been handed to the writer (``Recorder._capture``).
"""

from __future__ import annotations

from typing import Any

from ..store.hashing import content_hash
from ..values.loadability import judge

#: Preview keys that say a capture depends on where the value was found.
NAMED_PARTS = ("placeholder", "placeholders", "redacted_parts", "warnings")
#: Captures kept for lending; the map starts again when full (memory stays bounded).
LIMIT = 4096
#: Payloads above this are not kept to be judged (a bigger traced capture is not lent).
PAYLOAD_BYTES = 64 * 1024


def clean(preview: dict[str, Any], error: str | None) -> bool:
    """Whether a capture with this preview and error depends on the value alone."""
    return error is None and not any(part in preview for part in NAMED_PARTS)


class LentCaptures:
    """Captures made by one kind of step, lent to the other (see the module docstring).

    Keys are the hex digests of values' plain pickles; entries ``(ref tuple, payload)``:
    the tracer's ``(preview, payload, serializer)`` reference and the payload bytes still to
    be judged, or None when the value cache made it (judged already)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple, bytes | None]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, digest: str, ref: tuple, payload: bytes | None) -> None:
        """Keep the tracer's clean capture ``ref`` of the value whose pickle digest is
        ``digest``, its ``payload`` to be judged when the value cache borrows it."""
        if payload is not None and len(payload) > PAYLOAD_BYTES:
            return
        if len(self._kept) >= LIMIT:
            self._kept.clear()
        self._kept[digest] = (ref, payload)

    def lend(self, detector: bytes, judged: bool) -> dict[str, Any] | None:
        """The value ref (``{"p", "b", "s"}``) of a kept capture of the value whose plain
        pickle is ``detector``, or None. ``judged``: the borrower judges loadability (a
        capture whose payload the judge finds not loadable is not lent)."""
        kept = self._kept.get(content_hash(detector).hex())
        if kept is None:
            return None
        (preview, payload_key, serializer), payload = kept
        if payload_key is None:
            return None
        if judged and payload is not None and judge(payload)[0] is False:
            return None
        return {"p": preview, "b": payload_key, "s": serializer}

    def offer(self, captures: list[tuple[bytes, dict[str, Any]]], cache: dict[str, tuple],
              remember: Any) -> None:
        """Hand the value cache's clean captures ``[(detector, ref)]`` of a step now with the
        writer to the tracer: its content cache (``cache``, filled through ``remember``) and
        this map, keyed by the detector's digest."""
        for detector, ref in captures:
            digest = content_hash(detector).hex()
            if digest not in cache:
                tracer_ref = (ref["p"], ref.get("b"), ref.get("s"))
                remember(digest, tracer_ref)
                self.keep(digest, tracer_ref, None)

    def clear(self) -> None:
        self._kept.clear()
