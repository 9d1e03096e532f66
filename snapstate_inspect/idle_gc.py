"""Full garbage collections while the inspector is idle, not in the middle of a key press.

CPython runs a full (generation-2) collection once enough objects have survived younger
collections, on whichever allocation tips it over, and it walks every tracked object in the
process. With a hostile 200,000-child preview on screen that is ~330,000 objects and ~130 ms
on the bench machine (``bench/bench_inspector.py``): the key that happened to trigger it took
150-240 ms instead of ~15. The same pause is the reason Textual stops the collector during
smooth scrolling (``App.PAUSE_GC_ON_SCROLL``).

``IdleCollector`` moves those pauses to quiet moments: while the app runs, the automatic full
collection is left only as a safety net (``SAFETY_THRESHOLD`` generation-1 collections instead
of CPython's 10); young collections stay automatic, so short-lived cycles are still freed at
once. A timer calls ``tick()``, which runs the full collection itself once it is due (as many
generation-1 collections as CPython's own threshold) and nobody has pressed a key or clicked
for ``IDLE_SECONDS``, at most ``MAX_SHARE`` of the time: after a collection that took t
seconds the next waits t / MAX_SHARE (CPython's own rule, a full collection only once the
survivors grew by a quarter, cannot be read from Python; this bounds the cost instead).
``stop()`` puts the thresholds back (the app calls it on unmount).
"""

from __future__ import annotations

import gc
import time

from .model.background import Activity

IDLE_SECONDS = 1.0
CHECK_SECONDS = 0.5
SAFETY_THRESHOLD = 200
MAX_SHARE = 0.02  # at most 2% of the time in full collections (130 ms: one per 6.5 s at most)


class IdleCollector:
    """Runs due full garbage collections when ``activity`` has been quiet for ``idle`` s."""

    def __init__(self, activity: Activity, idle: float = IDLE_SECONDS,
                 share: float = MAX_SHARE) -> None:
        self.activity = activity
        self.idle = idle
        self.share = share
        self.collections = 0  # full collections run by ``tick``
        self._next = float("-inf")  # monotonic time before which no collection runs
        self._saved: tuple[int, int, int] | None = None

    @property
    def due_after(self) -> int:
        """Generation-1 collections after which a full collection is due (CPython's own
        threshold, as it was when ``start`` ran)."""
        return (self._saved or gc.get_threshold())[2]

    def start(self) -> None:
        """Leave full collections to ``tick`` (automatic ones only as a safety net)."""
        if self._saved is None:
            self._saved = gc.get_threshold()
            young, middle, _ = self._saved
            gc.set_threshold(young, middle, SAFETY_THRESHOLD)

    def stop(self) -> None:
        """Put CPython's thresholds back."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None

    def tick(self) -> bool:
        """Run a full collection if one is due and the UI is idle; True when it ran."""
        if (gc.get_count()[2] < self.due_after or self.activity.idle_for() < self.idle
                or time.monotonic() < self._next):
            return False
        started = time.monotonic()
        gc.collect()
        self.collections += 1
        self._next = time.monotonic() + (time.monotonic() - started) / self.share
        return True
