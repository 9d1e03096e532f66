"""One capture of a value for both kinds of steps of a traced run.

In a traced run, an explicit step (``checkpoint``, an effect, a ``@step`` call) captures its
stack through the value cache (``valuecache.py``), while the tracer captures the same frames'
locals at call and return events (``tracing/value_encoder.py``). The same object, unchanged, was
captured twice over. In ``pytest --snapstate`` on ``examples/tests``, 133 of the research
agent's 281 whole-value captures at explicit steps are now the tracer's, and 148 of its own
are offered to the tracer.

Both key a non-builtin value by the digest of its plain protocol-5 pickle, and both make its
preview and payload with ``values.capture_value``, so a capture one made can stand for the
other's when it depends on nothing but the value:

- the tracer's capture goes to the value cache for **the same object** only, with the same
  pickle (nothing changed in between) — the value cache's rule for sharing a capture between
  its slots (``shared_captures.py``). The object is remembered by weak reference where it
  takes one, else by its id (a list, a dict), never kept alive;
- only a capture whose preview is all in the pickle (``transparent``): no address in it (a
  default repr — an object replaced by an equal-pickling one at another address would show
  the old one's), and no part whose own pickling hooks may leave out what its preview shows
  (``detectors.strict_detector``: a cache its ``__getstate__`` drops but its repr prints).
  Both ways: the tracer's content cache stands for every value with the same pickle, so a
  capture the value cache offers it must show nothing another object's would not;
- the tracer keeps a capture only when its payload is the very pickle it hashed: another
  thread may change the object between the two, and the digest would then name another
  state than the capture shows;
- no placeholder, redacted part or warning (they name the path the value was found under);
- no capture error;
- for the value cache, the loadability verdict it would have reached: traced captures skip
  that judgement (``test_load`` off), so a lent one is judged from its payload first
  (``loadability.judge``, opcodes only) and refused when the judge says "not loadable"
  (the value cache's capture would then take another path).

A lent capture's blobs must be in the file before the step that names them: a traced capture's
went to the writer when it was made; an explicit step's captures are offered to the tracer
(``ValueEncoder.take_offers``) only once its step has been handed to the writer
(``Recorder._capture``).
"""

from __future__ import annotations

import weakref
from typing import Any

from ..store.hashing import content_hash
from ..values.loadability import judge
from .detectors import strict_detector

#: What a default repr writes before an address (``<Foo object at 0x7f…>``).
ADDRESS = b" at 0x"
#: Preview keys that say a capture depends on where the value was found.
NAMED_PARTS = ("placeholder", "placeholders", "redacted_parts", "warnings")
#: Captures kept for lending, and the bytes of their payloads: the map starts again when
#: either is reached (memory stays bounded).
LIMIT = 4096
KEPT_BYTES = 16 * 1024 * 1024
#: Payloads above this are not kept to be judged (a bigger traced capture is not lent).
PAYLOAD_BYTES = 64 * 1024


def clean(preview: dict[str, Any], error: str | None) -> bool:
    """Whether a capture with this preview and error depends on the value alone."""
    return error is None and not any(part in preview for part in NAMED_PARTS)


def transparent(value: Any, preview_json: bytes) -> bool:
    """Whether a capture of ``value`` whose preview encodes as ``preview_json`` shows nothing
    its pickle does not hold: no address (``ADDRESS``) and no part with pickling hooks that may
    leave state out (``detectors.strict_detector`` refuses it). Never raises."""
    if ADDRESS in preview_json:
        return False
    try:
        strict_detector(value)
    except Exception:  # noqa: BLE001 - a part that may hide state, or any pickling failure
        return False
    return True


class LentCaptures:
    """Captures made by one kind of step, lent to the other (see the module docstring).

    The tracer's captures are kept by the object captured, ``id -> (pickle digest, ref
    tuple, payload, weak reference or None)``: the ``(preview, payload, serializer)``
    reference and the payload bytes still to be judged when the value cache borrows it."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[str, tuple, bytes, Any]] = {}
        self._bytes = 0  # of the payloads kept

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, value: Any, digest: str, ref: tuple, payload: bytes,
             preview_json: bytes) -> None:
        """Keep the tracer's clean capture ``ref`` of ``value`` (whose pickle digest is
        ``digest``; its preview encoded ``preview_json``) and its ``payload``, to be judged
        when the value cache borrows it. Not kept: a payload other than the pickle hashed
        (another thread changed the object in between), or a capture not ``transparent``."""
        if len(payload) > PAYLOAD_BYTES or ref[1] != digest:
            return
        if not transparent(value, preview_json):
            return
        try:
            weak = weakref.ref(value)
        except TypeError:  # a list, a dict: by id alone (a reused id must match the pickle too)
            weak = None
        if len(self._kept) >= LIMIT or self._bytes + len(payload) > KEPT_BYTES:
            self.clear()
        self._kept[id(value)] = (digest, ref, payload, weak)
        self._bytes += len(payload)

    def lend(self, value: Any, detector: bytes, judged: bool) -> dict[str, Any] | None:
        """The value ref (``{"p", "b", "s"}``) of the tracer's capture of this very ``value``
        when its plain pickle was ``detector`` then too, or None. ``judged``: the borrower
        judges loadability (a capture whose payload the judge finds not loadable is not
        lent)."""
        kept = self._kept.get(id(value))
        if kept is None:
            return None
        digest, (preview, payload_key, serializer), payload, weak = kept
        if weak is not None and weak() is not value:
            return None
        if digest != content_hash(detector).hex():
            return None
        if judged and judge(payload)[0] is False:
            return None
        return {"p": preview, "b": payload_key, "s": serializer}

    def clear(self) -> None:
        self._kept.clear()
        self._bytes = 0
