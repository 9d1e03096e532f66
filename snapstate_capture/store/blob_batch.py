"""Reading many small blobs at once: the frame records of thousands of steps.

``prefetch(timeline, keys)`` reads the rows of the keys not yet cached ``BATCH`` at a time, one
``IN`` query each, and decodes them into the timeline's blob cache (checked against their
hashes and bounded by ``sanitize.MAX_RECORD`` as every read is), so that reading each of them
next — ``Timeline.blob``, ``json_blob`` — asks the store nothing. Comparing two 10,000-step
runs read 20,000 frame records one query each (~20 µs a query). Delta bases among the keys are
decoded from the rows read ahead; a base outside them costs one chain query, as for a single
read. Only bytes are kept (the cache holds inner bytes, which the garbage collector never
walks): the caller parses one record at a time and drops it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .sanitize import MAX_RECORD

if TYPE_CHECKING:
    from .reader import Timeline

#: Keys per query (SQLite's variable limit is 32,766; PostgreSQL has none that matters here).
BATCH = 500


def prefetch(timeline: Timeline, keys: Iterable[str]) -> None:
    """Read and decode the blobs ``keys`` (hex) into ``timeline``'s blob cache.

    Raises what ``Timeline.blob`` raises for a key it cannot read (``NotFoundError``,
    ``IntegrityError``, ``TimelineError``); a malformed key is left for that read to report.
    """
    blobs = timeline._blobs
    wanted: dict[bytes, None] = {}
    for key in keys:
        try:
            raw = bytes.fromhex(key)
        except (ValueError, TypeError):
            continue
        if not blobs.cached(raw):
            wanted[raw] = None
    order = list(wanted)
    for start in range(0, len(order), BATCH):
        part = order[start:start + BATCH]
        rows = {bytes(h): (codec, size, data) for h, codec, size, data
                in timeline.engine.blob_rows(part) if isinstance(h, bytes)}
        with timeline._lock:
            blobs.offer(rows)
            try:
                for raw in part:
                    timeline.blob(raw.hex(), limit=MAX_RECORD)
            finally:
                blobs.offer({})
